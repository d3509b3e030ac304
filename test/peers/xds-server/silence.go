package main

import (
	"os"
	"os/signal"
	"sync"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// silence is a discovery server that takes calls and answers nothing, on
// command: after SIGUSR1 every new call gets its response headers and then
// waits; SIGUSR2 lets the waiting calls (and later ones) be served again.
// Calls already being served go on as they were.
type silence struct {
	mu      sync.Mutex
	silent  bool
	release chan struct{}
}

func newSilence() *silence {
	s := &silence{release: make(chan struct{})}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		for sig := range sigs {
			s.set(sig == syscall.SIGUSR1)
		}
	}()
	return s
}

func (s *silence) set(silent bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if silent == s.silent {
		return
	}
	s.silent = silent
	if silent {
		s.release = make(chan struct{})
		emit("silent")
	} else {
		close(s.release)
		emit("answering")
	}
}

// held returns the channel closed when answering resumes, or nil when not silent.
func (s *silence) held() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.silent {
		return nil
	}
	return s.release
}

func (s *silence) interceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if release := s.held(); release != nil {
		// The call is accepted (headers sent), then nothing: a slow or overloaded istiod.
		_ = ss.SendHeader(metadata.MD{})
		emit("call_held", "method", info.FullMethod)
		select {
		case <-release:
			emit("call_released", "method", info.FullMethod)
		case <-ss.Context().Done():
			return ss.Context().Err()
		}
	}
	return handler(srv, ss)
}
