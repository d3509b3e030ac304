// kxspy: a logging gRPC proxy between a sidecar agent and istiod, to see what the agent really sends on its upstream
// streams: every stream's method and gRPC metadata (authorization redacted to its length), and for ADS the node of the
// first (Delta)DiscoveryRequest as JSON. Everything is forwarded unchanged (metadata included) to istiod over TLS.
// Built inside Istio's module with an overlay (spy/build.sh) so no file is added to the Istio tree.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

type frame struct{ b []byte }
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.(*frame).b, nil }
func (rawCodec) Unmarshal(d []byte, v any) error {
	v.(*frame).b = append([]byte(nil), d...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

var _ encoding.Codec = rawCodec{}

var (
	listen   = flag.String("listen", "198.18.200.2:15012", "address to serve (TLS)")
	upstream = flag.String("upstream", "198.18.200.1:15012", "istiod's TLS xDS/CA address")
	sni      = flag.String("sni", "istiod.istio-system.svc", "istiod's server name")
	certF    = flag.String("cert", "", "serving cert (PEM)")
	keyF     = flag.String("key", "", "serving key (PEM)")
	rootF    = flag.String("root", "", "istiod's root (PEM)")
	mu       sync.Mutex
)

func out(v map[string]any) {
	mu.Lock()
	defer mu.Unlock()
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func mdMap(md metadata.MD) map[string][]string {
	m := map[string][]string{}
	for k, vs := range md {
		for _, v := range vs {
			if k == "authorization" {
				v = fmt.Sprintf("%s... (%d chars, redacted)", v[:min(len(v), 7)], len(v))
			}
			m[k] = append(m[k], v)
		}
	}
	return m
}

func firstNode(method string, b []byte) any {
	var msg proto.Message
	switch {
	case strings.HasSuffix(method, "/StreamAggregatedResources"):
		msg = &discovery.DiscoveryRequest{}
	case strings.HasSuffix(method, "/DeltaAggregatedResources"):
		msg = &discovery.DeltaDiscoveryRequest{}
	default:
		return nil
	}
	if err := proto.Unmarshal(b, msg); err != nil {
		return err.Error()
	}
	var node proto.Message
	if r, ok := msg.(*discovery.DiscoveryRequest); ok {
		node = r.GetNode()
	} else {
		node = msg.(*discovery.DeltaDiscoveryRequest).GetNode()
	}
	j, _ := protojson.Marshal(node)
	var v any
	_ = json.Unmarshal(j, &v)
	return v
}

func main() {
	flag.Parse()
	cert, err := tls.LoadX509KeyPair(*certF, *keyF)
	if err != nil {
		log.Fatal(err)
	}
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(*rootF)
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		log.Fatalf("root: %v", err)
	}
	up, err := grpc.NewClient(*upstream, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: *sni})),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})),
		grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
			return relay(up, ss)
		}))
	lis, err := (&netListen{}).listen(*listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("kxspy on %s -> %s", *listen, *upstream)
	log.Fatal(srv.Serve(lis))
}

func relay(up *grpc.ClientConn, ss grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(ss)
	md, _ := metadata.FromIncomingContext(ss.Context())
	out(map[string]any{"stream": method, "metadata": mdMap(md)})
	fwd := metadata.MD{}
	for k, v := range md {
		if k == ":authority" || k == "content-type" || k == "user-agent" || strings.HasPrefix(k, "grpc-") {
			continue
		}
		fwd[k] = v
	}
	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(ss.Context(), fwd))
	defer cancel()
	cs, err := up.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	if err != nil {
		return err
	}
	errc := make(chan error, 2)
	go func() { // agent -> istiod
		first := true
		for {
			f := &frame{}
			if err := ss.RecvMsg(f); err != nil {
				_ = cs.CloseSend()
				if err == io.EOF {
					return
				}
				errc <- err
				return
			}
			if first {
				if n := firstNode(method, f.b); n != nil {
					out(map[string]any{"stream": method, "first_request_node": n})
				}
				first = false
			}
			if err := cs.SendMsg(f); err != nil {
				errc <- err
				return
			}
		}
	}()
	go func() { // istiod -> agent
		if h, err := cs.Header(); err == nil {
			_ = ss.SendHeader(h)
		}
		for {
			f := &frame{}
			if err := cs.RecvMsg(f); err != nil {
				ss.SetTrailer(cs.Trailer())
				if err == io.EOF {
					errc <- nil
				} else {
					errc <- err
				}
				return
			}
			if err := ss.SendMsg(f); err != nil {
				errc <- err
				return
			}
		}
	}()
	return <-errc
}
