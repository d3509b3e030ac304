# diffnode.py A/bootstrap.json B/bootstrap.json (or inspect.sh's upstream-node.json): the node (id, cluster, metadata key by key) and the bootstrap's top-level
# sections of two sidecars, differences first. Values of pod-specific keys (names, IPs, uids) differ by nature: both shown.
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def flat(d, pre=""):
    out = {}
    for k, v in (d or {}).items():
        if isinstance(v, dict) and v and pre.count(".") < 1: out.update(flat(v, f"{pre}{k}."))
        else: out[pre + k] = v
    return out
import re
snake = lambda n: {re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), k): v for k, v in (n or {}).items()}   # spy: protojson
na, nb = snake(a.get("node")), snake(b.get("node"))
ma, mb = flat(na.get("metadata", {})), flat(nb.get("metadata", {}))
print(f"node.id       {na.get('id')}  |  {nb.get('id')}")
print(f"node.cluster  {na.get('cluster')}  |  {nb.get('cluster')}")
for k in ("locality", "user_agent_name", "user_agent_version", "user_agent_build_version"):
    if na.get(k) != nb.get(k): print(f"node.{k}  {json.dumps(na.get(k))}  |  {json.dumps(nb.get(k))}")
only_a, only_b = sorted(set(ma) - set(mb)), sorted(set(mb) - set(ma))
same = sorted(k for k in set(ma) & set(mb) if ma[k] == mb[k]); diff = sorted(k for k in set(ma) & set(mb) if ma[k] != mb[k])
print(f"\nmetadata only in the first ({len(only_a)}):");  [print(f"  {k} = {json.dumps(ma[k])[:200]}") for k in only_a]
print(f"metadata only in the second ({len(only_b)}):");  [print(f"  {k} = {json.dumps(mb[k])[:200]}") for k in only_b]
print(f"metadata with different values ({len(diff)}):"); [print(f"  {k}: {json.dumps(ma[k])[:150]}  |  {json.dumps(mb[k])[:150]}") for k in diff]
print(f"metadata equal ({len(same)}): " + ", ".join(same))
ka, kb = set(a) - {"node"}, set(b) - {"node"}
print(f"\nbootstrap sections only in the first: {sorted(ka - kb)}\nonly in the second: {sorted(kb - ka)}")
for k in sorted(ka & kb):
    if a[k] != b[k]: print(f"section {k} differs")
print("clusters (static): " + str(sorted(c["name"] for c in a.get("static_resources", {}).get("clusters", []))) + "  |  " +
      str(sorted(c["name"] for c in b.get("static_resources", {}).get("clusters", []))))
print("listeners (static): " + str(sorted(l.get("name", "?") for l in a.get("static_resources", {}).get("listeners", []))) + "  |  " +
      str(sorted(l.get("name", "?") for l in b.get("static_resources", {}).get("listeners", []))))
