package main

import (
	"sort"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/emptypb"
)

// nameTableType is Istio's NDS type (pkg/dns/proto/nds.proto in istio/istio).
const nameTableType = "type.googleapis.com/istio.networking.nds.v1.NameTable"

// nameTableResource is the single NDS resource's name in the linear cache.
const nameTableResource = "nametable"

// nameInfo is one host of the config file's "nameTable" map (NameTable.NameInfo).
type nameInfo struct {
	IPs       []string `json:"ips"`
	Registry  string   `json:"registry"`
	Shortname string   `json:"shortname"`
	Namespace string   `json:"namespace"`
}

// nameTableMessage encodes the NameTable by hand (field numbers from
// nds.proto) and carries it as the unknown fields of an Empty: proto.Marshal
// writes unknown fields back as they are, so the cache serves exactly the
// NameTable's bytes without the peer needing Istio's generated types.
func nameTableMessage(table map[string]nameInfo) types.Resource {
	hosts := make([]string, 0, len(table))
	for host := range table {
		hosts = append(hosts, host)
	}
	sort.Strings(hosts)
	var out []byte
	for _, host := range hosts {
		info := table[host]
		var value []byte
		for _, ip := range info.IPs {
			value = appendString(value, 1, ip)
		}
		for field, text := range map[protowire.Number]string{2: info.Registry, 3: info.Shortname, 4: info.Namespace} {
			if text != "" {
				value = appendString(value, field, text)
			}
		}
		entry := appendString(nil, 1, host)
		entry = protowire.AppendTag(entry, 2, protowire.BytesType)
		entry = protowire.AppendBytes(entry, value)
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, entry)
	}
	message := &emptypb.Empty{}
	message.ProtoReflect().SetUnknown(out)
	return message
}

func appendString(b []byte, field protowire.Number, text string) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendString(b, text)
}
