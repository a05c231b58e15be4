package server

import "testing"

func TestTransportDefaults(t *testing.T) {
	cases := []struct {
		in                 Options
		workers            int
		window, connWindow int32
	}{
		{Options{}, DefaultStreamWorkers, DefaultWindowSize, DefaultConnWindowSize},
		{Options{StreamWorkers: -1, WindowSize: 1000, ConnWindowSize: 2 << 20}, -1, minWindowSize, 2 << 20},
		{Options{StreamWorkers: 3, WindowSize: 128 << 10}, 3, 128 << 10, DefaultConnWindowSize},
	}
	for i, c := range cases {
		o := c.in
		o.ensureDefaults()
		if o.StreamWorkers != c.workers || o.WindowSize != c.window || o.ConnWindowSize != c.connWindow {
			t.Errorf("case %d: workers %d, windows %d/%d", i, o.StreamWorkers, o.WindowSize, o.ConnWindowSize)
		}
		srv, err := New(nil, c.in)
		if err != nil {
			t.Fatal(err)
		}
		if to := srv.TransportOptions(); to.Workers != c.workers || to.WindowSize != c.window || to.ConnWindowSize != c.connWindow || to.Codec == nil || to.UnaryInterceptor == nil || to.StreamInterceptor == nil {
			t.Errorf("case %d: transport options %+v", i, to)
		}
		srv.NewTransport(nil).Stop()
		srv.Close()
	}
}
