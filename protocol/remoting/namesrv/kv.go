package namesrv

import (
	"context"

	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// putKV answers PUT_KV_CONFIG (100) with SUCCESS.
func (p *Processor) putKV(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
	var h PutKVConfigRequestHeader
	if err := req.DecodeHeader(&h); err != nil {
		return badRequest(req, err)
	}
	p.kv.Put(h.Namespace, h.Key, h.Value)
	return wire.NewResponse(req, wire.Success, "")
}

// getKV answers GET_KV_CONFIG (101): SUCCESS with the value in the
// "value" extField, or QUERY_NOT_FOUND.
func (p *Processor) getKV(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
	var h KVConfigRequestHeader
	if err := req.DecodeHeader(&h); err != nil {
		return badRequest(req, err)
	}
	v, ok := p.kv.Get(h.Namespace, h.Key)
	if !ok {
		return errorResponse(req, wire.QueryNotFound, "No config item, Namespace: %s Key: %s", h.Namespace, h.Key)
	}
	resp := wire.NewResponse(req, wire.Success, "")
	resp.EncodeHeader(&GetKVConfigResponseHeader{Value: v})
	return resp
}

// deleteKV answers DELETE_KV_CONFIG (102) with SUCCESS, whether or not the
// key existed.
func (p *Processor) deleteKV(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
	var h KVConfigRequestHeader
	if err := req.DecodeHeader(&h); err != nil {
		return badRequest(req, err)
	}
	p.kv.Delete(h.Namespace, h.Key)
	return wire.NewResponse(req, wire.Success, "")
}

// getKVList answers GET_KVLIST_BY_NAMESPACE (219): SUCCESS with a KVTable
// body, or QUERY_NOT_FOUND for an empty namespace.
func (p *Processor) getKVList(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
	var h NamespaceRequestHeader
	if err := req.DecodeHeader(&h); err != nil {
		return badRequest(req, err)
	}
	kv, ok := p.kv.List(h.Namespace)
	if !ok {
		return errorResponse(req, wire.QueryNotFound, "No config item, Namespace: %s", h.Namespace)
	}
	return jsonResponse(req, wire.KVTable{Table: kv})
}
