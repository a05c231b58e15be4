package wire

// Transaction states carried in EndTransactionRequestHeader.CommitOrRollback
// (the transaction bits of the message sysFlag).
const (
	TransactionNotType      int32 = 0x0 // no decision yet ("unknown")
	TransactionPreparedType int32 = 0x4 // half message (sysFlag only)
	TransactionCommitType   int32 = 0x8
	TransactionRollbackType int32 = 0xC
)

// EndTransactionRequestHeader is the header of END_TRANSACTION (37).
// Required: producerGroup, tranStateTableOffset, commitLogOffset,
// commitOrRollback (one of TransactionNotType, TransactionCommitType,
// TransactionRollbackType), msgId.
type EndTransactionRequestHeader struct {
	ProducerGroup        string // producerGroup
	TranStateTableOffset int64  // tranStateTableOffset: queue offset of the half message
	CommitLogOffset      int64  // commitLogOffset of the half message
	CommitOrRollback     int32  // commitOrRollback
	FromTransactionCheck bool   // fromTransactionCheck: answering CHECK_TRANSACTION_STATE
	MsgID                string // msgId: UNIQ_KEY of the message
	TransactionID        string // transactionId, optional
	BrokerName           string // bname, optional
}

// DecodeFields implements Header.
func (h *EndTransactionRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("EndTransactionRequestHeader", ext)
	h.ProducerGroup = r.nonEmpty("producerGroup")
	h.TranStateTableOffset = r.i64(true, 0, "tranStateTableOffset")
	h.CommitLogOffset = r.i64(true, 0, "commitLogOffset")
	h.CommitOrRollback = r.i32(true, 0, "commitOrRollback")
	if r.err == nil {
		switch h.CommitOrRollback {
		case TransactionNotType, TransactionCommitType, TransactionRollbackType:
		default:
			r.invalid([]string{"commitOrRollback"}, ext["commitOrRollback"], "want 0 (unknown), 8 (commit) or 12 (rollback)")
		}
	}
	h.FromTransactionCheck = r.boolean(false, false, "fromTransactionCheck")
	h.MsgID = r.str(true, "msgId")
	h.TransactionID = r.str(false, "transactionId")
	h.BrokerName = r.str(false, "bname")
	return r.err
}

// EncodeFields implements Header.
func (h *EndTransactionRequestHeader) EncodeFields(ext map[string]string) {
	ext["producerGroup"] = h.ProducerGroup
	putI64(ext, "tranStateTableOffset", h.TranStateTableOffset)
	putI64(ext, "commitLogOffset", h.CommitLogOffset)
	putI32(ext, "commitOrRollback", h.CommitOrRollback)
	putBool(ext, "fromTransactionCheck", h.FromTransactionCheck)
	ext["msgId"] = h.MsgID
	putOpt(ext, "transactionId", h.TransactionID)
	putOpt(ext, "bname", h.BrokerName)
}

// CheckTransactionStateRequestHeader is the header of the server-to-client
// request CHECK_TRANSACTION_STATE (39). Required: tranStateTableOffset,
// commitLogOffset.
type CheckTransactionStateRequestHeader struct {
	Topic                string // topic, optional (Java 5)
	TranStateTableOffset int64  // tranStateTableOffset
	CommitLogOffset      int64  // commitLogOffset
	MsgID                string // msgId: UNIQ_KEY
	TransactionID        string // transactionId
	OffsetMsgID          string // offsetMsgId
	BrokerName           string // bname, optional
}

// DecodeFields implements Header.
func (h *CheckTransactionStateRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("CheckTransactionStateRequestHeader", ext)
	h.Topic = r.str(false, "topic")
	h.TranStateTableOffset = r.i64(true, 0, "tranStateTableOffset")
	h.CommitLogOffset = r.i64(true, 0, "commitLogOffset")
	h.MsgID = r.str(false, "msgId")
	h.TransactionID = r.str(false, "transactionId")
	h.OffsetMsgID = r.str(false, "offsetMsgId")
	h.BrokerName = r.str(false, "bname")
	return r.err
}

// EncodeFields implements Header.
func (h *CheckTransactionStateRequestHeader) EncodeFields(ext map[string]string) {
	putOpt(ext, "topic", h.Topic)
	putI64(ext, "tranStateTableOffset", h.TranStateTableOffset)
	putI64(ext, "commitLogOffset", h.CommitLogOffset)
	putOpt(ext, "msgId", h.MsgID)
	putOpt(ext, "transactionId", h.TransactionID)
	putOpt(ext, "offsetMsgId", h.OffsetMsgID)
	putOpt(ext, "bname", h.BrokerName)
}
