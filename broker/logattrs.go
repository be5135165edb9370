package broker

// Log attribute keys, one place so every log line names things the same way.
const (
	attrConn       = "conn"
	attrClientID   = "client_id"
	attrAPI        = "api"
	attrAPIVersion = "api_version"
	attrTopic      = "topic"
	attrPartition  = "partition"
	attrErrorCode  = "error_code"
	attrGroup      = "group"
	attrListener   = "listener"
	attrPrincipal  = "principal"
	attrMechanism  = "mechanism" // a SASL mechanism
	attrReauth     = "reauthentication"
	attrReason     = "reason"
)
