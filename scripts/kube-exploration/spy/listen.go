package main

import "net"

type netListen struct{}

func (netListen) listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }
