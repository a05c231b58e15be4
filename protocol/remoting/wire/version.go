package wire

import "strconv"

// Ordinals of Java's MQVersion that anchor VersionName: from V4_0_0 on,
// each release a.b.c follows its a.b.c SNAPSHOT, one release per
// a.b.c with c and b from 0 to 9 (the Go client's 317 is V4_5_2, 401
// V4_9_4, 473 V5_3_0).
const (
	versionV4_0_0Snapshot = 212
	versionV5_9_9         = 611
)

// VersionName names a remoting command's version as RocketMQ does
// ("V4_5_2", "V5_3_0_SNAPSHOT") for the versions 4.0.0 to 5.9.9, and
// gives other values as their number.
func VersionName(v int32) string {
	if v < versionV4_0_0Snapshot || v > versionV5_9_9 {
		return strconv.Itoa(int(v))
	}
	rel := (v - versionV4_0_0Snapshot) / 2 // releases since V4_0_0
	n := 400 + rel                         // 100a + 10b + c
	name := "V" + strconv.Itoa(int(n/100)) + "_" + strconv.Itoa(int(n/10%10)) + "_" + strconv.Itoa(int(n%10))
	if (v-versionV4_0_0Snapshot)%2 == 0 {
		name += "_SNAPSHOT"
	}
	return name
}
