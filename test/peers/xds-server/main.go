// Command xds-server is a small ADS (SotW + Delta) control plane used as a
// test peer: it serves the resources listed in a JSON/YAML file to every
// node, re-reads the file when its content changes, and logs every stream,
// request and response as one JSON object per line on stdout.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"
	"sigs.k8s.io/yaml"
)

// nodeKey is the single snapshot-cache key: every node sees the same snapshot.
const nodeKey = "all"

type sameForAll struct{}

func (sameForAll) ID(*core.Node) string { return nodeKey }

func main() {
	address := flag.String("address", "127.0.0.1:0", "listen address (port 0 picks a free port)")
	configPath := flag.String("config", "", "resource file (JSON or YAML), required")
	poll := flag.Duration("poll", 100*time.Millisecond, "how often to check the config file for changes")
	tlsCert := flag.String("tls-cert", "", "server certificate (PEM); with --tls-key enables TLS, and with --tls-ca mutual TLS")
	tlsKey := flag.String("tls-key", "", "server private key (PEM)")
	tlsCA := flag.String("tls-ca", "", "CA bundle (PEM) that client certificates must chain to")
	maxMsg := flag.Int("max-msg-bytes", 128<<20, "max gRPC message size, both directions")
	requireToken := flag.String("require-token", "", "refuse streams whose authorization is not \"Bearer <this>\" (UNAUTHENTICATED), as istiod's 15012 does")
	clientCA := flag.String("client-ca", "", "with --tls-cert/--tls-key: ask for a client certificate signed by this CA (PEM), as istiod's 15012 does")
	clientCert := flag.String("client-cert", "optional", "with --client-ca: optional (verified if given, istiod's way) or required")
	maxAge := flag.Duration("max-connection-age", 0, "close each connection after this long (GOAWAY), as istiod does; 0: never")
	noDelta := flag.Bool("no-delta", false, "answer DeltaAggregatedResources UNIMPLEMENTED, as a Pilot without Delta xDS (Istio 1.1's) does")
	noSotw := flag.Bool("no-sotw", false, "answer StreamAggregatedResources UNIMPLEMENTED, as a server with Delta xDS only does")
	flag.Parse()

	if *configPath == "" {
		fatal(errors.New("--config is required"))
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(*maxMsg),
		grpc.MaxSendMsgSize(*maxMsg),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
	}
	switch n := countSet(*tlsCert, *tlsKey, *tlsCA); {
	case n == 0:
	case n == 2 && *tlsCA == "" && *clientCA != "":
		config, err := clientCATLS(*tlsCert, *tlsKey, *clientCA, *clientCert)
		if err != nil {
			fatal(err)
		}
		opts = append(opts, grpc.Creds(loggingCreds{credentials.NewTLS(config)}))
	case n == 2 && *tlsCA == "":
		opts = append(opts, grpc.Creds(loggingCreds{credentials.NewTLS(serverTLS(*tlsCert, *tlsKey))}))
	case n == 3:
		opts = append(opts, grpc.Creds(loggingCreds{credentials.NewTLS(mutualTLS(*tlsCert, *tlsKey, *tlsCA))}))
	default:
		fatal(errors.New("--tls-cert and --tls-key must be given together (and --tls-ca for mutual TLS)"))
	}
	if *maxAge > 0 {
		opts = append(opts, maxConnectionAge(*maxAge))
	}
	interceptors := []grpc.StreamServerInterceptor{logCallMetadata}
	if *requireToken != "" {
		interceptors = append(interceptors, tokenCheck(*requireToken))
	}
	// Last: a refused token is refused at once, silent or not.
	interceptors = append(interceptors, newSilence().interceptor)
	opts = append(opts, grpc.ChainStreamInterceptor(interceptors...))

	lis, err := net.Listen("tcp", *address)
	if err != nil {
		fatal(err)
	}
	emit("listening", "address", lis.Addr().String(), "tls", *tlsCert != "")

	snapshots := cachev3.NewSnapshotCache(true, sameForAll{}, log.LoggerFuncs{
		WarnFunc:  func(f string, a ...any) { emit("cache_warning", "message", fmt.Sprintf(f, a...)) },
		ErrorFunc: func(f string, a ...any) { emit("cache_error", "message", fmt.Sprintf(f, a...)) },
	})
	names := cachev3.NewLinearCache(nameTableType)
	w := &watcher{path: *configPath, cache: snapshots, names: names}
	w.check(true)
	go func() {
		for range time.Tick(*poll) {
			w.check(false)
		}
	}()

	srv := grpc.NewServer(opts...)
	// NDS requests go to the linear cache, every other type to the snapshots.
	mux := &cachev3.MuxCache{
		Classify:      func(r *cachev3.Request) string { return cacheFor(r.GetTypeUrl()) },
		ClassifyDelta: func(r *cachev3.DeltaRequest) string { return cacheFor(r.GetTypeUrl()) },
		Caches:        map[string]cachev3.Cache{"snapshots": snapshots, "names": names},
	}
	var xds serverv3.Server = healthSink{serverv3.NewServer(context.Background(), mux, newCallbacks())}
	switch {
	case *noDelta && *noSotw:
		fatal(errors.New("--no-delta and --no-sotw leave nothing to serve"))
	case *noDelta:
		discoverygrpc.RegisterAggregatedDiscoveryServiceServer(srv, sotwOnly{xds})
	case *noSotw:
		discoverygrpc.RegisterAggregatedDiscoveryServiceServer(srv, deltaOnly{xds})
	default:
		discoverygrpc.RegisterAggregatedDiscoveryServiceServer(srv, xds)
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-sigs
		emit("shutdown", "signal", s.String())
		srv.Stop()
		os.Exit(0)
	}()
	if err := srv.Serve(lis); err != nil {
		fatal(err)
	}
}

func cacheFor(typeURL string) string {
	if typeURL == nameTableType {
		return "names"
	}
	return "snapshots"
}

func countSet(vals ...string) (n int) {
	for _, v := range vals {
		if v != "" {
			n++
		}
	}
	return n
}

func fatal(err error) {
	emit("fatal", "error", err.Error())
	os.Exit(1)
}

// mutualTLS returns a config that re-reads the key pair and the CA on every
// handshake (so rotated files take effect) and requires a client certificate
// signed by that CA.
func mutualTLS(certFile, keyFile, caFile string) *tls.Config {
	return &tls.Config{
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				emit("tls_error", "error", err.Error())
				return nil, err
			}
			caPEM, err := os.ReadFile(caFile)
			if err != nil {
				emit("tls_error", "error", err.Error())
				return nil, err
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(caPEM) {
				err := fmt.Errorf("no certificates in %s", caFile)
				emit("tls_error", "error", err.Error())
				return nil, err
			}
			return &tls.Config{
				Certificates: []tls.Certificate{cert},
				ClientCAs:    pool,
				ClientAuth:   tls.RequireAndVerifyClientCert,
				MinVersion:   tls.VersionTLS12,
				NextProtos:   []string{"h2"},
			}, nil
		},
	}
}

// loggingCreds logs the outcome of every TLS handshake.
type loggingCreds struct {
	credentials.TransportCredentials
}

func (c loggingCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	out, info, err := c.TransportCredentials.ServerHandshake(conn)
	if err != nil {
		emit("tls_error", "peer", conn.RemoteAddr().String(), "error", err.Error())
	} else if ti, ok := info.(credentials.TLSInfo); ok {
		client := ""
		if certs := ti.State.PeerCertificates; len(certs) > 0 {
			client = certs[0].Subject.String()
		}
		emit("tls_handshake", "peer", conn.RemoteAddr().String(), "client", client, "spiffe", spiffeID(ti.State), "serial", clientSerial(ti.State), "alpn", ti.State.NegotiatedProtocol)
	}
	return out, info, err
}

func (c loggingCreds) Clone() credentials.TransportCredentials {
	return loggingCreds{c.TransportCredentials.Clone()}
}

// ---------------------------------------------------------------- logging

var stdoutMu sync.Mutex

// emit prints {"event":EVENT,k1:v1,...,"t":unixMillis} as one line on stdout.
// os.Stdout is unbuffered, so each line is flushed immediately.
func emit(event string, kv ...any) {
	var b bytes.Buffer
	b.WriteString(`{"event":`)
	writeJSON(&b, event)
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteByte(',')
		writeJSON(&b, kv[i])
		b.WriteByte(':')
		writeJSON(&b, kv[i+1])
	}
	b.WriteString(`,"t":` + strconv.FormatInt(time.Now().UnixMilli(), 10) + "}\n")
	stdoutMu.Lock()
	defer stdoutMu.Unlock()
	os.Stdout.Write(b.Bytes())
}

func writeJSON(b *bytes.Buffer, v any) {
	if s, ok := v.([]string); ok && s == nil {
		v = []string{} // print [] rather than null
	}
	j, err := json.Marshal(v)
	if err != nil {
		j, _ = json.Marshal(fmt.Sprint(v))
	}
	b.Write(j)
}

// ---------------------------------------------------------------- config

// supportedTypes are the resource types a config file may contain. Each of
// them is always put in the snapshot (possibly empty), so that removing the
// last resource of a type is pushed too.
var supportedTypes = []string{
	resourcev3.ListenerType,
	resourcev3.RouteType,
	resourcev3.ClusterType,
	resourcev3.EndpointType,
	resourcev3.SecretType,
	resourcev3.ExtensionConfigType,
}

// parseConfig decodes {"resources":[{"@type":...,...},...]} (JSON or YAML).
func parseConfig(path string, data []byte, version string) (*cachev3.Snapshot, map[string]int, map[string]nameInfo, error) {
	js := data
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".json" && !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		var err error
		if js, err = yaml.YAMLToJSON(data); err != nil {
			return nil, nil, nil, fmt.Errorf("yaml: %w", err)
		}
	}
	var file struct {
		Resources *[]json.RawMessage `json:"resources"`
		NameTable map[string]nameInfo `json:"nameTable"`
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, nil, nil, fmt.Errorf("config: %w", err)
	}
	if file.Resources == nil {
		// Also protects against reading a half-written (e.g. empty) file.
		return nil, nil, nil, errors.New(`config: missing top-level "resources" list`)
	}

	byType := map[string][]types.Resource{}
	for _, t := range supportedTypes {
		byType[t] = nil
	}
	counts := map[string]int{}
	seen := map[string]bool{}
	unmarshal := protojson.UnmarshalOptions{DiscardUnknown: false}
	for i, raw := range *file.Resources {
		var a anypb.Any
		if err := unmarshal.Unmarshal(raw, &a); err != nil {
			return nil, nil, nil, fmt.Errorf("resources[%d]: %w", i, err)
		}
		if _, ok := byType[a.TypeUrl]; !ok {
			return nil, nil, nil, fmt.Errorf("resources[%d]: unsupported type %q", i, a.TypeUrl)
		}
		msg, err := a.UnmarshalNew()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("resources[%d]: %w", i, err)
		}
		name := cachev3.GetResourceName(msg)
		if name == "" {
			return nil, nil, nil, fmt.Errorf("resources[%d]: %s without a name", i, a.TypeUrl)
		}
		if key := a.TypeUrl + " " + name; seen[key] {
			return nil, nil, nil, fmt.Errorf("resources[%d]: duplicate %s %q", i, a.TypeUrl, name)
		} else {
			seen[key] = true
		}
		byType[a.TypeUrl] = append(byType[a.TypeUrl], msg)
		counts[a.TypeUrl[strings.LastIndex(a.TypeUrl, ".")+1:]]++
	}
	snap, err := cachev3.NewSnapshot(version, byType)
	if file.NameTable != nil {
		counts["NameTable"] = len(file.NameTable)
	}
	return snap, counts, file.NameTable, err
}

// watcher polls the config file and sets a new snapshot when its content changes.
type watcher struct {
	path    string
	cache   cachev3.SnapshotCache
	names   *cachev3.LinearCache // the NDS type: go-control-plane's snapshots take Envoy's types only
	applied string // version (content hash) last tried, good or bad
	pending string // version seen on the previous poll, not yet tried
	lastErr string // last read error, to log it once rather than every poll
}

func (w *watcher) check(initial bool) {
	data, err := os.ReadFile(w.path)
	if err != nil {
		if err.Error() != w.lastErr {
			w.lastErr = err.Error()
			emit("config_error", "error", err.Error())
		}
		return
	}
	w.lastErr = ""
	sum := sha256.Sum256(data)
	version := hex.EncodeToString(sum[:])[:12]
	if version == w.applied {
		w.pending = ""
		return
	}
	// After startup, only take content that was the same on two consecutive
	// polls, so a file caught in the middle of being rewritten is skipped.
	if !initial && version != w.pending {
		w.pending = version
		return
	}
	w.applied, w.pending = version, ""

	snap, counts, names, err := parseConfig(w.path, data, version)
	if err != nil {
		emit("config_error", "version", version, "error", err.Error())
		return
	}
	if err := snap.Consistent(); err != nil {
		emit("snapshot_inconsistent", "version", version, "error", err.Error())
	}
	if err := w.cache.SetSnapshot(context.Background(), nodeKey, snap); err != nil {
		emit("config_error", "version", version, "error", err.Error())
		return
	}
	if names != nil {
		w.names.SetResources(map[string]types.Resource{nameTableResource: nameTableMessage(names)})
	} else {
		w.names.SetResources(map[string]types.Resource{})
	}
	emit("snapshot", "version", version, "resources", counts)
}

// serverTLS is TLS without client certificates: the client proves itself with a token.
func serverTLS(certFile, keyFile string) *tls.Config {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}}
}

// logCallMetadata logs the gRPC metadata of every call (what istiod reads ClusterID from), the token left out.
func logCallMetadata(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	md, _ := metadata.FromIncomingContext(ss.Context())
	seen := map[string]string{}
	for key, values := range md {
		if key != "authorization" && len(values) > 0 {
			seen[key] = values[0]
		}
	}
	emit("call_metadata", "method", info.FullMethod, "metadata", seen)
	return handler(srv, ss)
}

// tokenCheck refuses a stream without the expected bearer token, logging which way it failed.
func tokenCheck(token string) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		md, _ := metadata.FromIncomingContext(ss.Context())
		values := md.Get("authorization")
		switch {
		case len(values) == 0:
			emit("token_refused", "reason", "missing")
			return status.Error(codes.Unauthenticated, "authentication failure: no token")
		case values[0] != "Bearer "+token:
			emit("token_refused", "reason", "wrong")
			return status.Error(codes.Unauthenticated, "authentication failure: the token is not accepted")
		}
		return handler(srv, ss)
	}
}

// sotwOnly serves State of the World ADS and answers Delta UNIMPLEMENTED, as a
// server that predates Delta xDS does.
type sotwOnly struct{ serverv3.Server }

func (sotwOnly) DeltaAggregatedResources(discoverygrpc.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	emit("delta_refused")
	return status.Error(codes.Unimplemented, "unknown method DeltaAggregatedResources")
}

// deltaOnly serves Delta ADS and answers State of the World UNIMPLEMENTED.
type deltaOnly struct{ serverv3.Server }

func (deltaOnly) StreamAggregatedResources(discoverygrpc.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	emit("sotw_refused")
	return status.Error(codes.Unimplemented, "unknown method StreamAggregatedResources")
}
