// Package sdktest drives a strategy natively through the encoded ABI, as the host does: every
// call builds an abi.Request, passes its bytes to the strategy's handler (the code path of the
// module's `call` export) and decodes the abi.Response. So `go test` exercises what the host
// will run: the SDK's decoding of objects into the author's type, the hooks, the encoding of
// the answer, and the SDK's error answers.
//
// The package-level functions use the strategy the package under test registered with
// sdk.Register (in its init); For makes a Harness for any sdk.Handler. The host functions
// answer from the SDK's native recorder, which TakeLogs, TakeApplied, PutObject, SetHostError
// and ResetHost read and preset.
package sdktest

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"strategyhost.dev/sdk"
	"strategyhost.dev/sdk/abi"
)

// Harness drives one strategy through the ABI.
type Harness struct {
	handle   func([]byte) []byte
	manifest []byte
	// Context is sent with every request. For sets its resource to the strategy's first
	// resource and its request id to "test".
	Context sdk.Context
}

// For is a harness for a handler.
func For(h *sdk.Handler) *Harness {
	ctx := sdk.Context{RequestID: "test", Resource: sdk.ResourceInfo{Namespaced: true}}
	var m abi.Manifest
	if err := m.Unmarshal(h.Manifest()); err == nil && len(m.Resources) > 0 {
		r := m.Resources[0]
		ctx.Resource = sdk.ResourceInfo{Group: r.Group, Version: r.Version, Kind: r.Kind,
			Plural: r.Plural, Namespaced: r.Scope != abi.ScopeCluster}
	}
	return &Harness{handle: h.Handle, manifest: h.Manifest(), Context: ctx}
}

// Registered is a harness for the strategy registered with sdk.Register. It panics when none
// is.
func Registered() *Harness {
	h := sdk.Registered()
	if h == nil {
		panic("sdktest: no strategy is registered (sdk.Register in an init of the package under test)")
	}
	return For(h)
}

// Result is the decoded answer of one operation.
type Result struct {
	// Object is the answer's object, nil when it has none.
	Object      map[string]any
	FieldErrors []sdk.FieldError
	Warnings    []string
	Allowed     bool
	// Converted are the converted objects of a Convert.
	Converted []map[string]any
}

// Manifest decodes the strategy's manifest.
func (h *Harness) Manifest() (*abi.Manifest, error) {
	var m abi.Manifest
	if err := m.Unmarshal(h.manifest); err != nil {
		return nil, err
	}
	return &m, nil
}

// Call sends a request as it is (adding the harness's Context when it has none) and decodes the
// answer; Response.error is in the answer, not an error.
func (h *Harness) Call(req *abi.Request) (*abi.Response, error) {
	if req.Context == nil {
		req.Context = h.abiContext()
	}
	var resp abi.Response
	if err := resp.Unmarshal(h.handle(req.Marshal())); err != nil {
		return nil, fmt.Errorf("the response did not decode: %w", err)
	}
	return &resp, nil
}

// Op runs one operation (arm) on obj and old (either nil when the arm has none) and decodes the
// answer. A Response.error is returned as the error.
func (h *Harness) Op(arm abi.Arm, obj, old any) (*Result, error) {
	req := &abi.Request{Arm: arm}
	var err error
	if obj != nil {
		if req.Object, err = jsonOf(obj); err != nil {
			return nil, err
		}
	}
	if old != nil {
		if req.OldObject, err = jsonOf(old); err != nil {
			return nil, err
		}
	}
	return h.result(req)
}

func (h *Harness) result(req *abi.Request) (*Result, error) {
	resp, err := h.Call(req)
	if err != nil {
		return nil, err
	}
	if resp.Error != "" {
		return nil, errors.New(resp.Error)
	}
	r := &Result{Warnings: resp.Warnings, Allowed: resp.Allowed}
	for _, fe := range resp.FieldErrors {
		r.FieldErrors = append(r.FieldErrors, sdk.FieldError{Kind: fe.Kind, Field: fe.Field, Detail: fe.Detail})
	}
	if len(resp.Object) > 0 {
		if err := sdk.DecodeJSON(resp.Object, &r.Object); err != nil {
			return nil, fmt.Errorf("the answer's object did not decode: %w", err)
		}
	}
	if len(resp.ObjectPatch) > 0 {
		// A LazyObject's changes (ABI 1.4): the object is the request's with them applied, as
		// the host applies them.
		sent := req.Object
		if req.Admit != nil {
			sent = req.Admit.Object
		}
		if err := sdk.DecodeJSON(sent, &r.Object); err != nil {
			return nil, fmt.Errorf("the request's object did not decode: %w", err)
		}
		if err := applyPatch(r.Object, resp.ObjectPatch); err != nil {
			return nil, fmt.Errorf("the answer's patch %s does not apply: %w", resp.ObjectPatch, err)
		}
	}
	for _, c := range resp.ConvertedObjects {
		var obj map[string]any
		if err := sdk.DecodeJSON(c, &obj); err != nil {
			return nil, fmt.Errorf("a converted object did not decode: %w", err)
		}
		r.Converted = append(r.Converted, obj)
	}
	return r, nil
}

// Create runs the create phase (BeforeCreate: prepare, validate, and when valid warnings and
// canonicalize) on obj: the object to store, its field errors and the warnings.
func (h *Harness) Create(obj any) (map[string]any, []sdk.FieldError, []string, error) {
	r, err := h.Op(abi.ArmBeforeCreate, obj, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	return r.Object, r.FieldErrors, r.Warnings, nil
}

// Update runs the update phase (BeforeUpdate) on newObj over old.
func (h *Harness) Update(newObj, old any) (map[string]any, []sdk.FieldError, []string, error) {
	r, err := h.Op(abi.ArmBeforeUpdate, newObj, old)
	if err != nil {
		return nil, nil, nil, err
	}
	return r.Object, r.FieldErrors, r.Warnings, nil
}

// Delete runs BeforeDelete on obj: the field errors refusing the deletion.
func (h *Harness) Delete(obj any) ([]sdk.FieldError, error) {
	r, err := h.Op(abi.ArmBeforeDelete, obj, nil)
	if err != nil {
		return nil, err
	}
	return r.FieldErrors, nil
}

// AfterCreate runs the AfterCreate hook on obj.
func (h *Harness) AfterCreate(obj any) error {
	_, err := h.Op(abi.ArmAfterCreate, obj, nil)
	return err
}

// AfterUpdate runs the AfterUpdate hook.
func (h *Harness) AfterUpdate(newObj, old any) error {
	_, err := h.Op(abi.ArmAfterUpdate, newObj, old)
	return err
}

// AfterDelete runs the AfterDelete hook on obj.
func (h *Harness) AfterDelete(obj any) error {
	_, err := h.Op(abi.ArmAfterDelete, obj, nil)
	return err
}

// AllowCreateOnUpdate asks the strategy's answer.
func (h *Harness) AllowCreateOnUpdate() (bool, error) {
	r, err := h.Op(abi.ArmAllowCreateOnUpdate, nil, nil)
	if err != nil {
		return false, err
	}
	return r.Allowed, nil
}

// AllowUnconditionalUpdate asks the strategy's answer.
func (h *Harness) AllowUnconditionalUpdate() (bool, error) {
	r, err := h.Op(abi.ArmAllowUnconditionalUpdate, nil, nil)
	if err != nil {
		return false, err
	}
	return r.Allowed, nil
}

// Write is one write as an admission policy is asked about it: what the host sends in an admit
// request. The object and old object are any JSON-encodable values (nil when absent).
type Write struct {
	Operation         sdk.AdmissionOperation
	Namespace, Name   string
	Subresource       string
	Object, OldObject any
}

// Mutate runs a policy's mutating phase on w: the object after the policy's Mutate.
func (h *Harness) Mutate(w Write) (map[string]any, error) {
	r, err := h.admit(abi.AdmissionPhaseMutate, w)
	if err != nil {
		return nil, err
	}
	return r.Object, nil
}

// Admit runs a policy's validating phase on w: its field errors (a refusal) and, when it
// admits, its warnings.
func (h *Harness) Admit(w Write) ([]sdk.FieldError, []string, error) {
	r, err := h.admit(abi.AdmissionPhaseValidate, w)
	if err != nil {
		return nil, nil, err
	}
	return r.FieldErrors, r.Warnings, nil
}

func (h *Harness) admit(phase abi.AdmissionPhase, w Write) (*Result, error) {
	a := &abi.AdmitRequest{Phase: phase, Operation: string(w.Operation), Namespace: w.Namespace,
		Name: w.Name, Subresource: w.Subresource}
	var err error
	if w.Object != nil {
		if a.Object, err = jsonOf(w.Object); err != nil {
			return nil, err
		}
	}
	if w.OldObject != nil {
		if a.OldObject, err = jsonOf(w.OldObject); err != nil {
			return nil, err
		}
	}
	return h.result(&abi.Request{Arm: abi.ArmAdmit, Admit: a})
}

// Authorize asks an authorizer about spec (a SubjectAccessReview's spec, as JSON or a value
// that encodes to it): whether it allowed or denied the request (neither: no opinion), and why.
func (h *Harness) Authorize(spec any) (allowed, denied bool, reason string, err error) {
	data, err := jsonOf(spec)
	if err != nil {
		return false, false, "", err
	}
	resp, err := h.Call(&abi.Request{Arm: abi.ArmAuthorize, Authorize: &abi.AuthorizeRequest{Spec: data}})
	if err != nil {
		return false, false, "", err
	}
	if resp.Error != "" {
		return false, false, "", errors.New(resp.Error)
	}
	return resp.Allowed, resp.Denied, resp.Reason, nil
}

// Convert converts objects to desiredAPIVersion.
func (h *Harness) Convert(desiredAPIVersion string, objs ...any) ([]map[string]any, error) {
	req := &abi.Request{Arm: abi.ArmConvert, Convert: &abi.ConvertRequest{DesiredAPIVersion: desiredAPIVersion}}
	for _, obj := range objs {
		data, err := jsonOf(obj)
		if err != nil {
			return nil, err
		}
		req.Convert.Objects = append(req.Convert.Objects, data)
	}
	r, err := h.result(req)
	if err != nil {
		return nil, err
	}
	return r.Converted, nil
}

// RoundTrip converts obj to via and back to its own apiVersion, as the host does before it
// swaps in a new version of a converting module, and says where the object came back
// different (as the Rust SDK's conversion::round_trip does).
func (h *Harness) RoundTrip(obj any, via string) error {
	data, err := jsonOf(obj)
	if err != nil {
		return err
	}
	var original map[string]any
	if err := sdk.DecodeJSON(data, &original); err != nil {
		return err
	}
	from, _ := original["apiVersion"].(string)
	step := func(obj map[string]any, to string) (map[string]any, error) {
		out, err := h.Convert(to, obj)
		if err != nil {
			return nil, fmt.Errorf("converting to %s failed: %v", to, err)
		}
		if len(out) != 1 {
			return nil, fmt.Errorf("converting to %s answered %d objects", to, len(out))
		}
		if v, present := out[0]["apiVersion"]; v != to {
			return nil, fmt.Errorf("converting to %s answered apiVersion %s", to, shown(v, present))
		}
		return out[0], nil
	}
	there, err := step(original, via)
	if err != nil {
		return err
	}
	back, err := step(there, from)
	if err != nil {
		return err
	}
	if path, before, after, differ := firstDifference(original, back, ""); differ {
		return fmt.Errorf("%s → %s → %s changed %s: %s became %s", from, via, from, path, before, after)
	}
	return nil
}

// firstDifference is the first path (in key order) where a and b differ, with both values.
func firstDifference(a, b any, path string) (string, string, string, bool) {
	join := func(key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	x, xok := a.(map[string]any)
	y, yok := b.(map[string]any)
	if xok && yok {
		var keys []string
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p, pok := x[k]
			q, qok := y[k]
			if !pok || !qok {
				return join(k), shown(p, pok), shown(q, qok), true
			}
			if d, before, after, differ := firstDifference(p, q, join(k)); differ {
				return d, before, after, true
			}
		}
		return "", "", "", false
	}
	if shown(a, true) == shown(b, true) {
		return "", "", "", false
	}
	return path, shown(a, true), shown(b, true), true
}

func shown(v any, present bool) string {
	if !present {
		return "absent"
	}
	data, err := sdk.EncodeJSON(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

func (h *Harness) abiContext() *abi.Context {
	c := h.Context
	scope := abi.ScopeNamespaced
	if !c.Resource.Namespaced {
		scope = abi.ScopeCluster
	}
	return &abi.Context{
		Resource: &abi.Resource{Group: c.Resource.Group, Version: c.Resource.Version,
			Kind: c.Resource.Kind, Plural: c.Resource.Plural, Scope: scope},
		DryRun:    c.DryRun,
		RequestID: c.RequestID,
		User: &abi.UserInfo{Username: c.User.Username, UID: c.User.UID, Groups: c.User.Groups,
			Extra: c.User.Extra},
	}
}

// jsonOf is an object's JSON: a []byte or string as it is, anything else encoded.
func jsonOf(obj any) ([]byte, error) {
	switch o := obj.(type) {
	case []byte:
		return o, nil
	case string:
		return []byte(o), nil
	}
	return sdk.EncodeJSON(obj)
}

// Shown renders field errors one per line as kube-apiserver lists them ("spec.replicas:
// Invalid value: -1: must be greater than or equal to 0"), for test failure messages and
// comparisons.
func Shown(errs []sdk.FieldError) string {
	var lines []string
	for _, e := range errs {
		lines = append(lines, e.Error())
	}
	return strings.Join(lines, "\n")
}
