package sdk

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"

	"strategyhost.dev/sdk/abi"
)

// Handler answers the ABI for one strategy: its manifest, and every Request. NewHandler builds
// one; Register makes one the module's.
type Handler struct {
	manifest []byte
	run      func(ctx *Context, req *abi.Request) (*abi.Response, error)
}

// NewHandler checks a strategy and builds its handler. It panics when the description cannot
// load (no name, no resources, Applies without HostApply) or when Impl has a method named
// after a hook with another signature than the hook's, so such mistakes fail `go test`
// instead of being silently ignored. (The module itself skips the signature check: see
// hookcheck.go.)
func NewHandler[T any](s Strategy[T]) *Handler {
	if s.Name == "" {
		panic("sdk: the strategy has no Name")
	}
	if len(s.Resources) == 0 {
		panic("sdk: strategy " + s.Name + " has no Resources")
	}
	if len(s.Applies) > 0 && !slices.Contains(s.HostFunctions, HostApply) {
		panic("sdk: strategy " + s.Name + " declares Applies but not HostApply in HostFunctions")
	}
	h := resolveHooks[T](s.Impl)
	ops := s.Operations
	if ops == nil {
		ops = h.operations()
	}
	m := newManifest(s.Name, ops)
	for _, r := range s.Resources {
		m.Resources = append(m.Resources, abi.Resource{
			Group: r.Group, Version: r.Version, Kind: r.Kind, Plural: r.Plural, Scope: r.Scope,
		})
	}
	for _, f := range s.HostFunctions {
		if !slices.Contains(m.HostFunctions, f) {
			m.HostFunctions = append(m.HostFunctions, f)
		}
	}
	for _, gk := range s.Applies {
		m.Applies = append(m.Applies, abi.GroupKind{Group: gk.Group, Kind: gk.Kind})
	}
	return &Handler{manifest: m.Marshal(), run: h.run}
}

// newManifest is the manifest every module kind starts from: this SDK's ABI version, the
// module's name and operations, and the log host function.
func newManifest(name string, ops []Operation) abi.Manifest {
	return abi.Manifest{
		ABIVersion:      ABIVersion,
		ABIMinorVersion: ABIMinorVersion,
		Name:            name,
		Operations:      ops,
		HostFunctions:   []HostFunction{HostLog},
	}
}

// Manifest is the encoded abi.Manifest: what the module's `manifest` export returns. The
// caller must not modify it.
func (h *Handler) Manifest() []byte { return h.manifest }

// Handle answers one encoded abi.Request with an encoded abi.Response: what the module's `call`
// export does, callable natively to test a strategy through the ABI.
//
// A failure the host must know of answers Response.error, as the Rust SDK does: the request or
// an object did not decode ("the object did not decode: ..."), an After hook or Convert returned
// an error, the request was an admission policy's. A panic in a hook is recovered, logged at
// error level with its stack, and answered as Response.error "panic: <value>", so the host
// fails the request (the Rust SDK traps instead; the host fails the request either way). A
// fatal runtime error (out of memory, a panic on another goroutine) still ends the module.
func (h *Handler) Handle(request []byte) []byte {
	var req abi.Request
	if err := req.Unmarshal(request); err != nil {
		return failure("the request did not decode: " + err.Error())
	}
	if req.Arm == abi.ArmNone {
		return failure("the request names no operation")
	}
	resp, err := h.call(newContext(req.Context), &req)
	if err != nil {
		return failure(err.Error())
	}
	return resp.Marshal()
}

func (h *Handler) call(ctx *Context, req *abi.Request) (resp *abi.Response, err error) {
	defer func() {
		if v := recover(); v != nil {
			msg := fmt.Sprintf("panic: %v", v)
			Log(LevelError, fmt.Sprintf("%s (in %v)\n%s", msg, req.Arm, debug.Stack()))
			resp, err = nil, errors.New(msg)
		}
	}()
	return h.run(ctx, req)
}

func failure(reason string) []byte {
	return (&abi.Response{Error: reason}).Marshal()
}

// registered is the module's strategy, set by Register.
var registered *Handler

// Register makes a strategy the module's: the one its exports (manifest, call) and Handle and
// ManifestBytes answer for. Call it once, from an init function of the module's main package.
func Register[T any](s Strategy[T]) {
	register(NewHandler(s))
}

// register makes h the module's handler, once.
func register(h *Handler) {
	if registered != nil {
		panic("sdk: Register called twice; a module exports one strategy, policy or authorizer")
	}
	registered = h
}

// Registered is the handler Register made, or nil.
func Registered() *Handler { return registered }

// Handle answers one encoded request for the registered strategy (see Handler.Handle).
func Handle(request []byte) []byte {
	if registered == nil {
		return failure("no strategy is registered: call sdk.Register from an init function")
	}
	return registered.Handle(request)
}

// ManifestBytes is the registered strategy's encoded manifest. It panics when none is
// registered.
func ManifestBytes() []byte {
	if registered == nil {
		panic("sdk: no strategy is registered: call sdk.Register from an init function")
	}
	return registered.Manifest()
}
