package wire

import "testing"

func TestVersionName(t *testing.T) {
	for _, tc := range []struct {
		v    int32
		want string
	}{
		{317, "V4_5_2"}, // what rocketmq-client-go sends
		{401, "V4_9_4"},
		{DefaultVersion, "V5_3_0"},
		{472, "V5_3_0_SNAPSHOT"},
		{212, "V4_0_0_SNAPSHOT"},
		{213, "V4_0_0"},
		{411, "V4_9_9"},
		{413, "V5_0_0"},
		{611, "V5_9_9"},
		{612, "612"},
		{211, "211"},
		{-1, "-1"},
	} {
		if got := VersionName(tc.v); got != tc.want {
			t.Errorf("VersionName(%d) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
