// A third-party Karman module, as one published apart from Karman would
// be: "karman build --with example.com/karman-echo=DIR" compiles it in.
module example.com/karman-echo

go 1.26.0

// Karman's modules come from the source tree karman build is given.
require (
	github.com/karmanmq/karman/server v0.0.0-00010101000000-000000000000
	github.com/spf13/pflag v1.0.9
)
