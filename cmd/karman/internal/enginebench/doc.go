// Package enginebench measures the embedded engine: how fast messages are
// appended and read back, pulled, or popped and acknowledged, and how soon
// a waiting consumer gets a new message.
//
// Run opens an engine in a data directory, creates one topic and, by
// Options.Mode:
//
//   - ModeAppend sends Count messages of Size bytes from Producers
//     goroutines (one Send per message, or one SendBatch per Batch
//     messages), waits until everything is indexed, then pulls every queue
//     from its first offset to its last, 32 messages per call, from
//     Readers goroutines: phases "append" and "read".
//   - ModePull pre-loads Count messages (SendBatch of 32, not measured),
//     then Consumers goroutines, each owning distinct queues, pull them
//     Batch at a time: phase "pull".
//   - ModePop pre-loads the same way, then Consumers goroutines pop Batch
//     messages at a time and acknowledge each: phase "pop", with the
//     latency per Pop and, separately, per Ack.
//   - ModeSchedule starts one consumer per queue, waiting with
//     WaitForArrival then Pull, and sends Count timer messages whose
//     TIMER_DELIVER_MS is spread evenly over ScheduleWindow from
//     ScheduleLead after the start: phase "schedule" (Send rate and
//     latency). Phase "deliver" runs from the first due time to the last
//     arrival; its latency is each message's lateness, arrival minus due
//     time, with the sequence number and due time read from the body.
//   - ModeTxn sends Count messages with Send (phase "send"), then Count
//     half messages to a second topic, committing each with EndTransaction
//     (phase "txn", with the ratio of the two rates).
//
// The pull and pop modes then measure wake-up latency ("wakeup_pull",
// "wakeup_pop"): consumers wait on an empty topic (WaitForArrival then
// Pull, or Pop with a wait) while one producer sends WakeupCount messages,
// one every WakeupInterval. Each body starts with the message's sequence
// number; the producer stores the monotonic time just before each send in
// a slice at that index, and the consumer holding the message subtracts it
// from the time it got the message.
//
// The consuming phases prove that every pre-loaded message was consumed
// exactly once: each consumed (queue, offset) is marked in a bitmap, a
// second mark fails the run, and the marks must add up to Count. The
// deliver, send and txn phases do the same with the sequence number in
// each body, and deliver also fails on a message that arrives before its
// due time.
//
// Each phase prints one JSON line. Latency is measured per call into a
// fixed-size histogram per goroutine, so the measuring loops allocate
// nothing. Throughput counts message body bytes; MB means 10^6 bytes.
//
// Concurrency: each goroutine of a phase has its own histograms, merged
// after the phase; the consumed-message bitmap, the wake-up send times and
// the deliver phase's counters are atomics. The consumers of a schedule
// run outlive the schedule phase and stop at the end of the deliver phase
// (or of Run, when it fails in between). Run itself is not meant to run
// concurrently in one data directory.
package enginebench
