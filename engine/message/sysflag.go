package message

// Bits of Message.SysFlag (RocketMQ MessageSysFlag).
const (
	SysFlagCompressed int32 = 0x1 // body is compressed (zlib unless a compression type is set)
	SysFlagMultiTags  int32 = 0x2

	// The transaction state is a 2-bit field; read it with TransactionType.
	SysFlagTransactionNone     int32 = 0x0
	SysFlagTransactionPrepared int32 = 0x4
	SysFlagTransactionCommit   int32 = 0x8
	SysFlagTransactionRollback int32 = 0xC
	SysFlagTransactionMask     int32 = 0xC

	SysFlagBornHostV6  int32 = 0x10 // BORNHOST in the stored record is IPv6
	SysFlagStoreHostV6 int32 = 0x20 // STOREHOST in the stored record is IPv6
	SysFlagNeedUnwrap  int32 = 0x40 // batch that must be unwrapped
	SysFlagInnerBatch  int32 = 0x80

	// The compression type is a 3-bit field (Java 5 clients); 0 means zlib
	// when SysFlagCompressed is set.
	SysFlagCompressionMask int32 = 0x700
	SysFlagCompressionLZ4  int32 = 0x100
	SysFlagCompressionZstd int32 = 0x200
	SysFlagCompressionZlib int32 = 0x300
)

// TransactionType returns the transaction state of sysFlag: one of
// SysFlagTransactionNone, SysFlagTransactionPrepared,
// SysFlagTransactionCommit or SysFlagTransactionRollback.
func TransactionType(sysFlag int32) int32 {
	return sysFlag & SysFlagTransactionMask
}

// WithTransactionType returns sysFlag with its transaction state replaced by
// the state bits of t.
func WithTransactionType(sysFlag, t int32) int32 {
	return sysFlag&^SysFlagTransactionMask | t&SysFlagTransactionMask
}
