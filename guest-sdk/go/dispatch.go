package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"strategyhost.dev/sdk/abi"
)

// hooks are a strategy's hooks for objects of type T, each the implementation's method or the
// default.
type hooks[T any] struct {
	prepareForCreate         func(*Context, *T)
	validate                 func(*Context, *T) []FieldError
	warningsOnCreate         func(*Context, *T) []string
	canonicalize             func(*Context, *T)
	prepareForUpdate         func(*Context, *T, *T)
	validateUpdate           func(*Context, *T, *T) []FieldError
	warningsOnUpdate         func(*Context, *T, *T) []string
	allowCreateOnUpdate      func() bool
	allowUnconditionalUpdate func() bool
	beforeDelete             func(*Context, *T) []FieldError
	afterCreate              func(*Context, *T) error
	afterUpdate              func(*Context, *T, *T) error
	afterDelete              func(*Context, *T) error
	convert                  func(*Context, map[string]any, string) (map[string]any, error)
	// implemented are the operations beyond BeforeWrite the implementation has.
	implemented []Operation
}

func resolveHooks[T any](impl any) *hooks[T] {
	checkSignatures[T](impl)
	h := &hooks[T]{
		prepareForCreate:         func(*Context, *T) {},
		validate:                 func(*Context, *T) []FieldError { return nil },
		warningsOnCreate:         func(*Context, *T) []string { return nil },
		canonicalize:             func(*Context, *T) {},
		prepareForUpdate:         func(*Context, *T, *T) {},
		validateUpdate:           func(*Context, *T, *T) []FieldError { return nil },
		warningsOnUpdate:         func(*Context, *T, *T) []string { return nil },
		allowCreateOnUpdate:      func() bool { return false },
		allowUnconditionalUpdate: func() bool { return true },
		beforeDelete:             func(*Context, *T) []FieldError { return nil },
		afterCreate:              func(*Context, *T) error { return nil },
		afterUpdate:              func(*Context, *T, *T) error { return nil },
		afterDelete:              func(*Context, *T) error { return nil },
		convert: func(*Context, map[string]any, string) (map[string]any, error) {
			return nil, errors.New("this module does not convert objects")
		},
	}
	if x, ok := impl.(PrepareForCreator[T]); ok {
		h.prepareForCreate = x.PrepareForCreate
	}
	if x, ok := impl.(Validator[T]); ok {
		h.validate = x.Validate
	}
	if x, ok := impl.(CreateWarner[T]); ok {
		h.warningsOnCreate = x.WarningsOnCreate
	}
	if x, ok := impl.(Canonicalizer[T]); ok {
		h.canonicalize = x.Canonicalize
	}
	if x, ok := impl.(PrepareForUpdater[T]); ok {
		h.prepareForUpdate = x.PrepareForUpdate
	}
	if x, ok := impl.(UpdateValidator[T]); ok {
		h.validateUpdate = x.ValidateUpdate
	}
	if x, ok := impl.(UpdateWarner[T]); ok {
		h.warningsOnUpdate = x.WarningsOnUpdate
	}
	if x, ok := impl.(CreateOnUpdateAllower); ok {
		h.allowCreateOnUpdate = x.AllowCreateOnUpdate
	}
	if x, ok := impl.(UnconditionalUpdateAllower); ok {
		h.allowUnconditionalUpdate = x.AllowUnconditionalUpdate
	}
	if x, ok := impl.(BeforeDeleter[T]); ok {
		h.beforeDelete = x.BeforeDelete
		h.implemented = append(h.implemented, OpBeforeDelete)
	}
	if x, ok := impl.(AfterCreator[T]); ok {
		h.afterCreate = x.AfterCreate
		h.implemented = append(h.implemented, OpAfterCreate)
	}
	if x, ok := impl.(AfterUpdater[T]); ok {
		h.afterUpdate = x.AfterUpdate
		h.implemented = append(h.implemented, OpAfterUpdate)
	}
	if x, ok := impl.(AfterDeleter[T]); ok {
		h.afterDelete = x.AfterDelete
		h.implemented = append(h.implemented, OpAfterDelete)
	}
	if x, ok := impl.(Converter); ok {
		h.convert = x.Convert
		h.implemented = append(h.implemented, OpConvert)
	}
	return h
}

// operations are what the manifest lists by default: BeforeWrite, then the rest implemented.
func (h *hooks[T]) operations() []Operation {
	return append(append([]Operation{}, BeforeWrite...), h.implemented...)
}

// checkSignatures panics when impl has a method named after a strategy hook that is not the
// hook: the wrong object type, a missing return value, or a pointer receiver on a value passed
// as Impl.
func checkSignatures[T any](impl any) {
	checkHooks(impl, []reflect.Type{
		reflect.TypeFor[PrepareForCreator[T]](), reflect.TypeFor[Validator[T]](),
		reflect.TypeFor[CreateWarner[T]](), reflect.TypeFor[Canonicalizer[T]](),
		reflect.TypeFor[PrepareForUpdater[T]](), reflect.TypeFor[UpdateValidator[T]](),
		reflect.TypeFor[UpdateWarner[T]](), reflect.TypeFor[CreateOnUpdateAllower](),
		reflect.TypeFor[UnconditionalUpdateAllower](), reflect.TypeFor[BeforeDeleter[T]](),
		reflect.TypeFor[AfterCreator[T]](), reflect.TypeFor[AfterUpdater[T]](),
		reflect.TypeFor[AfterDeleter[T]](), reflect.TypeFor[Converter](),
	})
}

// checkPolicySignatures is checkSignatures for an admission policy's hooks.
func checkPolicySignatures[T any](impl any) {
	checkHooks(impl, []reflect.Type{
		reflect.TypeFor[AdmissionMutator[T]](), reflect.TypeFor[AdmissionValidator[T]](),
		reflect.TypeFor[AdmissionWarner[T]](),
	})
}

// run answers one request as the Rust SDK's dispatch does.
func (h *hooks[T]) run(ctx *Context, req *abi.Request) (*abi.Response, error) {
	resp := &abi.Response{}
	obj := func() (*T, error) { return decodeObject[T]("object", req.Object) }
	both := func() (*T, *T, error) {
		newObj, err := decodeObject[T]("object", req.Object)
		if err != nil {
			return nil, nil, err
		}
		old, err := decodeObject[T]("old object", req.OldObject)
		return newObj, old, err
	}
	var err error
	switch req.Arm {
	case abi.ArmPrepareForCreate:
		var o *T
		if o, err = obj(); err == nil {
			h.prepareForCreate(ctx, o)
			err = answerObject(resp, o)
		}
	case abi.ArmValidate:
		var o *T
		if o, err = obj(); err == nil {
			resp.FieldErrors = toABI(h.validate(ctx, o))
		}
	case abi.ArmWarningsOnCreate:
		var o *T
		if o, err = obj(); err == nil {
			resp.Warnings = h.warningsOnCreate(ctx, o)
		}
	case abi.ArmCanonicalize:
		var o *T
		if o, err = obj(); err == nil {
			h.canonicalize(ctx, o)
			err = answerObject(resp, o)
		}
	case abi.ArmPrepareForUpdate:
		var n, o *T
		if n, o, err = both(); err == nil {
			h.prepareForUpdate(ctx, n, o)
			err = answerObject(resp, n)
		}
	case abi.ArmValidateUpdate:
		var n, o *T
		if n, o, err = both(); err == nil {
			resp.FieldErrors = toABI(h.validateUpdate(ctx, n, o))
		}
	case abi.ArmWarningsOnUpdate:
		var n, o *T
		if n, o, err = both(); err == nil {
			resp.Warnings = h.warningsOnUpdate(ctx, n, o)
		}
	case abi.ArmAllowCreateOnUpdate:
		resp.Allowed = h.allowCreateOnUpdate()
	case abi.ArmAllowUnconditionalUpdate:
		resp.Allowed = h.allowUnconditionalUpdate()
	case abi.ArmBeforeDelete:
		var o *T
		if o, err = obj(); err == nil {
			resp.FieldErrors = toABI(h.beforeDelete(ctx, o))
		}
	case abi.ArmAfterCreate:
		var o *T
		if o, err = obj(); err == nil {
			err = h.afterCreate(ctx, o)
		}
	case abi.ArmAfterUpdate:
		var n, o *T
		if n, o, err = both(); err == nil {
			err = h.afterUpdate(ctx, n, o)
		}
	case abi.ArmAfterDelete:
		var o *T
		if o, err = obj(); err == nil {
			err = h.afterDelete(ctx, o)
		}
	case abi.ArmBeforeCreate:
		// The whole create phase, decoding the object once; warnings and canonicalize only
		// when validation passed.
		var o *T
		if o, err = obj(); err == nil {
			h.prepareForCreate(ctx, o)
			resp.FieldErrors = toABI(h.validate(ctx, o))
			if len(resp.FieldErrors) == 0 {
				resp.Warnings = h.warningsOnCreate(ctx, o)
				h.canonicalize(ctx, o)
			}
			err = answerObject(resp, o)
		}
	case abi.ArmBeforeUpdate:
		var n, o *T
		if n, o, err = both(); err == nil {
			h.prepareForUpdate(ctx, n, o)
			resp.FieldErrors = toABI(h.validateUpdate(ctx, n, o))
			if len(resp.FieldErrors) == 0 {
				resp.Warnings = h.warningsOnUpdate(ctx, n, o)
				h.canonicalize(ctx, n)
			}
			err = answerObject(resp, n)
		}
	case abi.ArmAdmit:
		err = errors.New("a strategy is not an admission policy")
	case abi.ArmConvert:
		err = h.convertAll(ctx, req.Convert, resp)
	default:
		err = errors.New("the request names no operation")
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func (h *hooks[T]) convertAll(ctx *Context, req *abi.ConvertRequest, resp *abi.Response) error {
	if req == nil {
		req = &abi.ConvertRequest{}
	}
	for _, object := range req.Objects {
		obj, err := decodeObject[map[string]any]("object", object)
		if err != nil {
			return err
		}
		converted, err := h.convert(ctx, *obj, req.DesiredAPIVersion)
		if err != nil {
			return err
		}
		out, err := encodeObject(&converted)
		if err != nil {
			return err
		}
		resp.ConvertedObjects = append(resp.ConvertedObjects, out)
	}
	return nil
}

// decodeObject decodes an object the host sent. A T with its own UnmarshalJSON is handed the
// input itself (once it is known to be valid JSON), so the errors of DecodeObject and the like
// can say where they arose, as serde_json does (" at line 1 column 42").
func decodeObject[T any](what string, data []byte) (*T, error) {
	obj, err := decodeInto[T](data)
	if err != nil {
		msg := err.Error()
		if line, column, ok := locate(data, err); ok {
			msg += fmt.Sprintf(" at line %d column %d", line, column)
		}
		return nil, fmt.Errorf("the %s did not decode: %s", what, msg)
	}
	return obj, nil
}

// decodeInto decodes data as a T: a LazyObject is the parser's own (no copy of it).
func decodeInto[T any](data []byte) (*T, error) {
	if _, lazy := any((*T)(nil)).(*LazyObject); lazy {
		parsed, err := parseTrusted(data)
		obj, _ := any(parsed).(*T)
		return obj, err
	}
	obj := new(T)
	if u, ok := any(obj).(json.Unmarshaler); ok && json.Valid(data) {
		if err := checkDepth(data); err != nil {
			return nil, err
		}
		return obj, u.UnmarshalJSON(bytes.TrimSpace(data))
	}
	return obj, DecodeJSON(data, obj)
}

// answerObject puts a changed object in resp as a module answers it: a LazyObject as its JSON
// Patch in ObjectPatch (ABI 1.4), any other type whole in Object.
func answerObject[T any](resp *abi.Response, obj *T) (err error) {
	if lazy, ok := any(obj).(*LazyObject); ok {
		if resp.ObjectPatch, err = lazy.JSONPatch(); err != nil {
			return fmt.Errorf("the object's changes did not encode: %v", err)
		}
		return nil
	}
	resp.Object, err = encodeObject(obj)
	return err
}

func encodeObject[T any](obj *T) ([]byte, error) {
	out, err := EncodeJSON(obj)
	if err != nil {
		return nil, fmt.Errorf("the object did not encode: %v", err)
	}
	return out, nil
}

func toABI(errs []FieldError) []abi.FieldError {
	out := make([]abi.FieldError, len(errs))
	for i, e := range errs {
		out[i] = abi.FieldError{Kind: e.Kind, Field: e.Field, Detail: e.Detail}
	}
	return out
}
