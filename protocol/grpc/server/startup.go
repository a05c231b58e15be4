package server

import (
	"sync"
	"time"

	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"github.com/karmanmq/karman/protocol/grpc/session"
)

// Answers to starting clients. A RocketMQ 5 client starts by querying
// the routes of its topics, and declares its settings on a telemetry
// stream as soon as the first route names a server. The Node.js client
// (rocketmq-client-nodejs 1.0.8) only begins to wait for the answer to
// its settings once every route query has ended, and drops an answer that
// arrives before: one that comes while the route of a later topic is
// being queried, or while a failed route query waits to be retried, is
// lost, and the client waits for the next until it declares its settings
// again, five minutes later. A client of several topics hangs in start-up
// that way as soon as its later route queries take longer than the
// settings' round trip, and one with an unknown topic always does.
//
// So for startupWindow after a client first declares its settings, the
// server repeats its answer on the telemetry stream repeatDelay after
// each route query of the client; and, for a client of several topics,
// once repeatDelay after the answer itself (for a route query that was
// under way while the settings were answered). The delay lets the client
// handle the route's answer first. A repeated answer changes nothing for
// a client that already has it.
const (
	startupWindow = time.Minute
	repeatDelay   = 100 * time.Millisecond
)

// startups holds the settings answers of the clients in their startup
// window, by session.
type startups struct {
	m sync.Map // *session.Session -> *rmqpb.TelemetryCommand
}

// answered records the answer to settings st a client declared. The
// client's first settings open its startup window, and the answer is
// repeated once if they name several topics.
func (t *startups) answered(sess *session.Session, st *rmqpb.Settings, answer *rmqpb.TelemetryCommand) {
	if _, seen := t.m.Swap(sess, answer); seen {
		return
	}
	time.AfterFunc(startupWindow, func() { t.m.Delete(sess) })
	if declaredTopics(st) > 1 {
		t.repeat(sess)
	}
}

// declaredTopics is the number of topics settings name: those a producer
// publishes to, or a consumer subscribes to.
func declaredTopics(st *rmqpb.Settings) int {
	return len(st.GetPublishing().GetTopics()) + len(st.GetSubscription().GetSubscriptions())
}

// routeQueried repeats the settings answer to a client in its startup
// window, which may have been dropped while the client queried a route.
func (t *startups) routeQueried(sess *session.Session) {
	if sess != nil {
		t.repeat(sess)
	}
}

// repeat sends the client its latest settings answer after repeatDelay,
// if it is still in its startup window then. A client whose stream is
// gone or full goes without: it declares its settings again when it
// reconnects.
func (t *startups) repeat(sess *session.Session) {
	if _, ok := t.m.Load(sess); !ok {
		return
	}
	time.AfterFunc(repeatDelay, func() {
		if a, ok := t.m.Load(sess); ok {
			sess.Send(a.(*rmqpb.TelemetryCommand))
		}
	})
}
