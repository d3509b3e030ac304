package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	pb "istio.io/api/security/v1alpha1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// mode is what the control endpoint can change while the peer runs.
type mode struct {
	// Refuse, when set, is the message of an UNAVAILABLE answer to every call.
	Refuse string `json:"refuse"`
	// DelayMs holds every answer back this long (a slow CA).
	DelayMs int64 `json:"delayMs"`
	// TTLSeconds caps the lifetime of issued certificates.
	TTLSeconds int64 `json:"ttlSeconds"`
	// Hostile, when set, answers with a chain the agent must refuse (see hostileModes).
	Hostile string `json:"hostile"`
	// Deny, when set, is the message of a PERMISSION_DENIED answer to every call.
	Deny string `json:"deny"`
	// PadBytes appends a chain element of this many bytes (an answer over the client's limit).
	PadBytes int64 `json:"padBytes"`
	// AltCert serves the --alt-tls-cert pair (a certificate for another name); a change ends the open connections.
	AltCert bool `json:"altCert"`
}

type service struct {
	pb.UnimplementedIstioCertificateServiceServer
	signer   *signer
	token    string
	identity string

	mu   sync.Mutex
	mode mode
	// onCertChange runs when AltCert changes: the open connections end.
	onCertChange func()
}

func (s *service) current() mode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

// CreateCertificate checks the token and the CSR's identity, then signs.
func (s *service) CreateCertificate(ctx context.Context, req *pb.IstioCertificateRequest) (*pb.IstioCertificateResponse, error) {
	m := s.current()
	if m.DelayMs > 0 {
		select {
		case <-time.After(time.Duration(m.DelayMs) * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	resp, identity, err := s.answer(ctx, req, m)
	event := map[string]any{"event": "request", "identity": identity, "validity": req.GetValidityDuration()}
	for key, value := range describeRequest(ctx, req) {
		event[key] = value
	}
	if err != nil {
		event["error"] = err.Error()
	} else {
		event["serial"] = resp.serial
		event["notAfter"] = resp.notAfter.UTC().Format(time.RFC3339)
	}
	emit(event)
	if err != nil {
		return nil, err
	}
	chain := resp.chain
	if m.PadBytes > 0 {
		chain = append(append([]string{}, chain...), strings.Repeat("x", int(m.PadBytes)))
	}
	return &pb.IstioCertificateResponse{CertChain: chain}, nil
}

func (s *service) answer(ctx context.Context, req *pb.IstioCertificateRequest, m mode) (*issued, string, error) {
	if m.Refuse != "" {
		return nil, "", status.Error(codes.Unavailable, m.Refuse)
	}
	if m.Deny != "" {
		return nil, "", status.Error(codes.PermissionDenied, m.Deny)
	}
	if err := s.checkToken(ctx); err != nil {
		return nil, "", err
	}
	csr, identity, err := parseCSR(req.GetCsr())
	if err != nil {
		return nil, identity, status.Error(codes.InvalidArgument, err.Error())
	}
	if s.identity != "" && identity != s.identity {
		return nil, identity, status.Errorf(codes.PermissionDenied, "the token is for %s, the CSR asks for %s", s.identity, identity)
	}
	lifetime := time.Duration(m.TTLSeconds) * time.Second
	if asked := time.Duration(req.GetValidityDuration()) * time.Second; asked > 0 && asked < lifetime {
		lifetime = asked
	}
	out, err := s.signer.sign(csr, lifetime, m.Hostile)
	if err != nil {
		return nil, identity, status.Error(codes.Internal, err.Error())
	}
	return out, identity, nil
}

func (s *service) checkToken(ctx context.Context) error {
	if s.token == "" {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	values := md.Get("authorization")
	if len(values) == 0 {
		return status.Error(codes.Unauthenticated, "no authorization header")
	}
	if strings.TrimPrefix(values[0], "Bearer ") != s.token {
		return status.Error(codes.Unauthenticated, "the token is not accepted")
	}
	return nil
}

// controlHandler: POST /mode with a JSON mode replaces it; GET /mode reads it.
func (s *service) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/mode", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			var next mode
			if err := json.NewDecoder(r.Body).Decode(&next); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if _, ok := hostileModes[next.Hostile]; !ok {
				http.Error(w, "unknown hostile mode "+next.Hostile, http.StatusBadRequest)
				return
			}
			s.mu.Lock()
			if next.TTLSeconds == 0 {
				next.TTLSeconds = s.mode.TTLSeconds
			}
			certChanged := next.AltCert != s.mode.AltCert
			s.mode = next
			s.mu.Unlock()
			if certChanged && s.onCertChange != nil {
				s.onCertChange()
			}
			emit(map[string]any{"event": "mode", "mode": next})
		}
		_ = json.NewEncoder(w).Encode(s.current())
	})
	return mux
}

// describeRequest says what the agent sent beyond the identity, as istiod would
// read it: the CSR's key, subject and SAN criticality, the CertSigner metadata,
// and the call's metadata other than gRPC's own.
func describeRequest(ctx context.Context, req *pb.IstioCertificateRequest) map[string]any {
	out := map[string]any{}
	if signer := req.GetMetadata().GetFields()["CertSigner"]; signer != nil {
		out["certSigner"] = signer.GetStringValue()
	}
	md, _ := metadata.FromIncomingContext(ctx)
	headers := map[string]string{}
	for key, values := range md {
		if key != "authorization" && !strings.HasPrefix(key, ":") && !strings.HasPrefix(key, "grpc-") && key != "content-type" && key != "user-agent" && key != "te" {
			headers[key] = strings.Join(values, ",")
		}
	}
	out["headers"] = headers
	if facts, err := csrFacts(req.GetCsr()); err == nil {
		for key, value := range facts {
			out[key] = value
		}
	}
	return out
}
