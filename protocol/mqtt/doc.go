// Package mqtt will hold the MQTT 3.1.1 and 5 server, mapping MQTT topics and
// subscriptions onto engine topics and light message queues.
package mqtt
