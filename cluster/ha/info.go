package ha

// Keys of the figures a replicated broker adds to its runtime information
// (GET_BROKER_RUNTIME_INFO), which "karman admin cluster list" reads.
const (
	InfoRole        = "haRole"            // "master" or "replica"
	InfoBrokerID    = "haBrokerId"        // the broker's id in its group (controller's, or the replica's at the name servers)
	InfoMasterEpoch = "haMasterEpoch"     // the group's master epoch as this broker knows it
	InfoInSync      = "haInSyncSet"       // the in-sync set, ids separated by commas (master, or the controller's record)
	InfoReplicaLag  = "haReplicaLagBytes" // a master's replicas: JSON object, id -> bytes behind
	InfoLag         = "haLagBytes"        // a replica: bytes of the master's log it does not hold
	InfoMaster      = "haMasterAddr"      // a replica: its master's HA address
	InfoController  = "haController"      // "true" when the role comes from the controller
)
