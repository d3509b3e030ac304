;; The smallest proxy-wasm (ABI 0.2.1) HTTP filter the e2e tests need: it adds
;; "x-wasm-plugin: loaded" to every response, proving Envoy runs the module.
(module
  (import "env" "proxy_add_header_map_value"
    (func $add_header (param i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "x-wasm-plugin")
  (data (i32.const 32) "loaded")
  (global $heap (mut i32) (i32.const 1024))
  (func (export "proxy_abi_version_0_2_1"))
  ;; A bump allocator: Envoy asks for memory to hand the module its config.
  (func (export "proxy_on_memory_allocate") (param $size i32) (result i32)
    (local $at i32)
    (local.set $at (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $size)))
    (if (i32.gt_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536)))
      (then (drop (memory.grow (i32.add (i32.div_u (local.get $size) (i32.const 65536)) (i32.const 1))))))
    (local.get $at))
  (func (export "proxy_on_context_create") (param i32 i32))
  (func (export "proxy_on_vm_start") (param i32 i32) (result i32) (i32.const 1))
  (func (export "proxy_on_configure") (param i32 i32) (result i32) (i32.const 1))
  ;; map type 2 is the response headers; 0 means Continue.
  (func (export "proxy_on_response_headers") (param i32 i32 i32) (result i32)
    (drop (call $add_header (i32.const 2) (i32.const 16) (i32.const 13) (i32.const 32) (i32.const 6)))
    (i32.const 0)))
