// Package sdk is the Go guest SDK for Strategy Host: write a resource's strategy in Go, build it
// as a WebAssembly reactor module for wasip1, and drop the .wasm file into the host's strategy
// directory. It speaks ABI 1.5 (../proto/strategy.proto), as the Rust SDK does, and answers
// every request as the Rust SDK would. Besides strategies, a module may be an admission policy
// across resources (Policy, RegisterPolicy) or an authorizer (Authorizer, RegisterAuthorizer).
//
// A strategy is a Strategy value: the manifest's description (name, resources, host functions,
// the resources its After hooks may apply) and Impl, a value whose methods are the hooks it
// implements, one small interface per hook (PrepareForCreator, Validator, AfterCreator, ...).
// T is the object type the hooks see: LazyObject (members parsed only when read or changed, the
// answer sent as a JSON Patch of the changes: the fastest, as the Rust SDK's LazyObject),
// map[string]any (numbers decode as json.Number, so integers survive exactly), or a struct
// decoded with encoding/json (which must keep the members it does not name: see DecodeObject,
// JoinObject and ObjectMeta). Register it from an init of the module's main package, which also
// needs an empty main:
//
//	package main
//
//	import "strategyhost.dev/sdk"
//
//	type widgets struct{}
//
//	func (widgets) PrepareForCreate(_ *sdk.Context, obj *map[string]any) {
//		spec, _ := (*obj)["spec"].(map[string]any)
//		if spec != nil && spec["size"] == nil {
//			spec["size"] = 1
//		}
//	}
//
//	func (widgets) Validate(_ *sdk.Context, obj *map[string]any) []sdk.FieldError {
//		if _, ok := (*obj)["spec"].(map[string]any); !ok {
//			return []sdk.FieldError{sdk.Required(sdk.NewFieldPath("spec"), "spec is required")}
//		}
//		return nil
//	}
//
//	func init() {
//		sdk.Register(sdk.Strategy[map[string]any]{
//			Name:      "widgets",
//			Resources: []sdk.Resource{{"example.com", "v1", "Widget", "widgets", sdk.Namespaced}},
//			Impl:      widgets{},
//		})
//	}
//
//	func main() {}
//
// Build the module with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o widgets.wasm .
//
// which exports memory, _initialize (the host runs it first: the package inits, so Register),
// alloc, dealloc, manifest and call. Test it natively with `go test`: package sdktest sends
// encoded requests through the same Handle the module's call export runs
// (sdktest.Create(obj) returns the object to store, its field errors and the warnings), and
// the host functions (Log, Get, List, Apply) answer from a native recorder that tests read and
// preset.
//
// Answers follow the Rust SDK: the create and update phases (BeforeCreate, BeforeUpdate)
// decode the object once and run warnings and canonicalize only when validation passed; an
// object that does not decode into T answers Response.error "the object did not decode: ...";
// an After hook's or Convert's error is Response.error. A panic in a hook is recovered, logged,
// and answered as Response.error "panic: <value>", so the host fails the request (a Rust module
// traps instead). A module instance serves many calls: the SDK keeps the buffers it hands the
// host alive and releases them at the start of the next call.
package sdk
