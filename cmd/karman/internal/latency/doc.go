// Package latency records durations into a fixed-size log-linear histogram
// and reads quantiles back, for benchmarks that must not allocate per
// sample.
//
// Buckets are exact below 32ns; above, each power of two is split into 32
// buckets, so a reported quantile is within about 3% of the true value.
// A Histogram is about 15 KiB and is not safe for concurrent use: give each
// goroutine its own and Merge them at the end.
package latency
