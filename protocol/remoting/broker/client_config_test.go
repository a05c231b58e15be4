package broker

import (
	"testing"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// checkClientBody is the body a Java push consumer sends for one
// subscription, as fastjson writes it (tag codes as numbers).
func checkClientBody(exprType, expr string) []byte {
	return []byte(`{"clientId":"10.0.0.1@4242","group":"g","subscriptionData":{"classFilterMode":false,` +
		`"codeSet":[],"expressionType":"` + exprType + `","subString":"` + expr + `","subVersion":1700000000000,` +
		`"tagsSet":[],"topic":"TopicA"}}`)
}

// CHECK_CLIENT_CONFIG answers as Java's broker does, so that Java push
// consumers subscribing with SQL92 start, and learn at start when their
// expression cannot work.
func TestCheckClientConfig(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	tests := []struct {
		name, exprType, expr string
		want                 wire.ResponseCode
	}{
		{"SQL92", wire.ExpressionSQL92, "a > 5 AND b = 'x'", wire.Success},
		{"tags", wire.ExpressionTag, "a || b", wire.Success},
		{"SQL92 that does not parse", wire.ExpressionSQL92, "a >", wire.SubscriptionParseFailed},
		{"unknown type", "XPATH", "/a", wire.SubscriptionParseFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := invoke(t, p, request(wire.CheckClientConfig, nil, checkClientBody(tt.exprType, tt.expr)))
			wantCode(t, resp, tt.want)
			if tt.want != wire.Success && resp.Remark == "" {
				t.Error("refusal without a remark")
			}
		})
	}
	wantCode(t, invoke(t, p, request(wire.CheckClientConfig, nil, nil)), wire.InvalidParameter)

	// A broker with SQL filtering off refuses SQL92 subscriptions with
	// SYSTEM_ERROR, as Java's does with enablePropertyFilter=false.
	off := newHarnessWith(t, harnessOptions{engine: engine.Options{DisableSQLFilter: true}})
	resp := invoke(t, off.dial(nil), request(wire.CheckClientConfig, nil, checkClientBody(wire.ExpressionSQL92, "a > 5")))
	wantCode(t, resp, wire.SystemError)
}
