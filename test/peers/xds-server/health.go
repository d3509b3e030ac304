package main

import (
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
)

// healthType is Istio's workload health report: a request an agent sends on its
// ADS stream, which istiod takes (WorkloadEntry health) and never answers.
const healthType = "type.googleapis.com/istio.v1.HealthInformation"

// healthSink takes health reports off every ADS stream, as istiod does: each is
// logged as a "health" event and never reaches the cache, so nothing answers it.
type healthSink struct{ serverv3.Server }

func (h healthSink) StreamAggregatedResources(s discoverygrpc.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	return h.Server.StreamAggregatedResources(sotwHealth{s})
}

func (h healthSink) DeltaAggregatedResources(s discoverygrpc.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return h.Server.DeltaAggregatedResources(deltaHealth{s})
}

type sotwHealth struct {
	discoverygrpc.AggregatedDiscoveryService_StreamAggregatedResourcesServer
}

func (s sotwHealth) Recv() (*discovery.DiscoveryRequest, error) {
	for {
		req, err := s.AggregatedDiscoveryService_StreamAggregatedResourcesServer.Recv()
		if err != nil || req.GetTypeUrl() != healthType {
			return req, err
		}
		emitHealth("sotw", req.GetErrorDetail().GetMessage(), req.GetErrorDetail() == nil)
	}
}

type deltaHealth struct {
	discoverygrpc.AggregatedDiscoveryService_DeltaAggregatedResourcesServer
}

func (s deltaHealth) Recv() (*discovery.DeltaDiscoveryRequest, error) {
	for {
		req, err := s.AggregatedDiscoveryService_DeltaAggregatedResourcesServer.Recv()
		if err != nil || req.GetTypeUrl() != healthType {
			return req, err
		}
		emitHealth("delta", req.GetErrorDetail().GetMessage(), req.GetErrorDetail() == nil)
	}
}

func emitHealth(kind, message string, healthy bool) {
	emit("health", "type", kind, "healthy", healthy, "error", message)
}
