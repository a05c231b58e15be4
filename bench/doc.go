// Package bench will hold load generators and side-by-side runs of Karman
// against peer brokers, shared by `karman bench`.
package bench
