package main

import (
	"context"
	"encoding/json"
	"sync"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// callbacks logs stream events. go-control-plane numbers SotW and Delta
// streams with separate counters, so streams are renumbered here from one
// shared counter: the "stream" field is unique across both kinds.
type callbacks struct {
	mu      sync.Mutex
	next    int64
	streams map[streamKey]*streamInfo
}

type streamKey struct {
	delta bool
	id    int64
}

type streamInfo struct {
	n        int64
	nodeSeen bool
	sent     map[string]sentResponse // SotW: last response per type URL
}

type sentResponse struct{ nonce, version string }

func newCallbacks() *callbacks {
	return &callbacks{streams: map[streamKey]*streamInfo{}}
}

func (c *callbacks) stream(delta bool, id int64) *streamInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := streamKey{delta, id}
	s := c.streams[k]
	if s == nil {
		c.next++
		s = &streamInfo{n: c.next, sent: map[string]sentResponse{}}
		c.streams[k] = s
	}
	return s
}

func (c *callbacks) open(ctx context.Context, delta bool, id int64) {
	kind := "sotw"
	if delta {
		kind = "delta"
	}
	remote := ""
	if p, ok := peer.FromContext(ctx); ok {
		remote = p.Addr.String()
	}
	emit("stream_open", "stream", c.stream(delta, id).n, "type", kind, "peer", remote)
}

func (c *callbacks) closed(delta bool, id int64, node *core.Node) {
	n := c.stream(delta, id).n
	c.mu.Lock()
	delete(c.streams, streamKey{delta, id})
	c.mu.Unlock()
	emit("stream_closed", "stream", n, "node", node.GetId())
}

// noteNode logs the node of a stream once, on the first request that carries it.
func (c *callbacks) noteNode(s *streamInfo, node *core.Node) {
	c.mu.Lock()
	first := node != nil && !s.nodeSeen
	if first {
		s.nodeSeen = true
	}
	c.mu.Unlock()
	if first {
		emit("node", "stream", s.n, "node", node.GetId(), "cluster", node.GetCluster(), "locality", localityJSON(node), "metadata", metadataJSON(node))
	}
}

// metadataJSON is the node metadata as received, in protobuf's JSON form, so
// tests can check the JSON types the agent made Envoy send (as istiod parses them).
func metadataJSON(node *core.Node) json.RawMessage {
	j, err := protojson.Marshal(node.GetMetadata())
	if err != nil || node.GetMetadata() == nil {
		return json.RawMessage("null")
	}
	return j
}

// localityJSON is node.locality in protobuf's JSON form ({} when unset).
func localityJSON(node *core.Node) json.RawMessage {
	j, err := protojson.Marshal(node.GetLocality())
	if err != nil || node.GetLocality() == nil {
		return json.RawMessage("{}")
	}
	return j
}

func (c *callbacks) OnStreamOpen(ctx context.Context, id int64, _ string) error {
	c.open(ctx, false, id)
	return nil
}

func (c *callbacks) OnDeltaStreamOpen(ctx context.Context, id int64, _ string) error {
	c.open(ctx, true, id)
	return nil
}

func (c *callbacks) OnStreamClosed(id int64, node *core.Node)      { c.closed(false, id, node) }
func (c *callbacks) OnDeltaStreamClosed(id int64, node *core.Node) { c.closed(true, id, node) }

func (c *callbacks) OnStreamRequest(id int64, req *discovery.DiscoveryRequest) error {
	s := c.stream(false, id)
	c.noteNode(s, req.GetNode())
	emit("request", "stream", s.n, "typeUrl", req.GetTypeUrl(),
		"version", req.GetVersionInfo(), "nonce", req.GetResponseNonce(),
		"names", req.GetResourceNames(), "error", req.GetErrorDetail().GetMessage(),
		"node", req.GetNode().GetId())

	// On a NACK Envoy repeats the version it last accepted. The snapshot
	// cache would take that as "client is behind" and resend the rejected
	// version at once, in a tight loop. Pretend the client holds the
	// rejected version instead, so nothing is resent until the file changes.
	if req.GetErrorDetail() != nil {
		c.mu.Lock()
		last, ok := s.sent[req.GetTypeUrl()]
		c.mu.Unlock()
		if ok && last.nonce == req.GetResponseNonce() {
			req.VersionInfo = last.version
		}
	}
	return nil
}

func (c *callbacks) OnStreamResponse(_ context.Context, id int64, _ *discovery.DiscoveryRequest, resp *discovery.DiscoveryResponse) {
	s := c.stream(false, id)
	c.mu.Lock()
	s.sent[resp.GetTypeUrl()] = sentResponse{resp.GetNonce(), resp.GetVersionInfo()}
	c.mu.Unlock()
	emit("response", "stream", s.n, "typeUrl", resp.GetTypeUrl(),
		"version", resp.GetVersionInfo(), "nonce", resp.GetNonce(),
		"resources", len(resp.GetResources()), "bytes", proto.Size(resp))
}

func (c *callbacks) OnStreamDeltaRequest(id int64, req *discovery.DeltaDiscoveryRequest) error {
	s := c.stream(true, id)
	c.noteNode(s, req.GetNode())
	initial := make(map[string]string, len(req.GetInitialResourceVersions()))
	for k, v := range req.GetInitialResourceVersions() {
		initial[k] = v
	}
	emit("request", "stream", s.n, "typeUrl", req.GetTypeUrl(),
		"nonce", req.GetResponseNonce(),
		"subscribe", req.GetResourceNamesSubscribe(),
		"unsubscribe", req.GetResourceNamesUnsubscribe(),
		"initialVersions", initial,
		"error", req.GetErrorDetail().GetMessage(),
		"node", req.GetNode().GetId())
	return nil
}

func (c *callbacks) OnStreamDeltaResponse(id int64, _ *discovery.DeltaDiscoveryRequest, resp *discovery.DeltaDiscoveryResponse) {
	names := make([]string, 0, len(resp.GetResources()))
	for _, r := range resp.GetResources() {
		names = append(names, r.GetName())
	}
	emit("response", "stream", c.stream(true, id).n, "typeUrl", resp.GetTypeUrl(),
		"version", resp.GetSystemVersionInfo(), "nonce", resp.GetNonce(),
		"resources", len(resp.GetResources()), "names", names,
		"removed", resp.GetRemovedResources(), "bytes", proto.Size(resp))
}

func (c *callbacks) OnFetchRequest(context.Context, *discovery.DiscoveryRequest) error         { return nil }
func (c *callbacks) OnFetchResponse(*discovery.DiscoveryRequest, *discovery.DiscoveryResponse) {}
