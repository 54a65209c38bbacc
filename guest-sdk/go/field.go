package sdk

import (
	"fmt"
	"strconv"

	"strategyhost.dev/sdk/abi"
)

// FieldPath is a path to a field, rendered the way Kubernetes does:
// spec.template.metadata.labels[app], spec.containers[0].name.
type FieldPath struct {
	path string
}

// NewFieldPath is a path starting at a top-level field.
func NewFieldPath(root string) FieldPath { return FieldPath{root} }

// Child is the path of a named child field: spec.replicas.
func (p FieldPath) Child(name string) FieldPath { return FieldPath{p.path + "." + name} }

// Index is the path of a list element: items[3].
func (p FieldPath) Index(i int) FieldPath {
	return FieldPath{p.path + "[" + strconv.Itoa(i) + "]"}
}

// Key is the path of a map entry: metadata.labels[app].
func (p FieldPath) Key(key string) FieldPath { return FieldPath{p.path + "[" + key + "]"} }

// String is the rendered path.
func (p FieldPath) String() string { return p.path }

// FieldErrorKind is Kubernetes' kind of a field error.
type FieldErrorKind = abi.FieldErrorKind

// The field error kinds.
const (
	// KindRequired: a required field is missing.
	KindRequired = abi.FieldErrorKindRequired
	// KindInvalid: the value is malformed or out of range.
	KindInvalid = abi.FieldErrorKindInvalid
	// KindForbidden: the field may not be set (or changed).
	KindForbidden = abi.FieldErrorKindForbidden
	// KindDuplicate: the value duplicates another.
	KindDuplicate = abi.FieldErrorKindDuplicate
	// KindNotSupported: the value is not one of the supported ones.
	KindNotSupported = abi.FieldErrorKindNotSupported
	// KindTooLong: the value is too long.
	KindTooLong = abi.FieldErrorKindTooLong
	// KindTooMany: the list or map has too many entries.
	KindTooMany = abi.FieldErrorKindTooMany
)

// FieldError is one field error: which field, what kind, and why. Make it with the
// constructors below, which take the same arguments as Kubernetes' field package and word the
// error as kube-apiserver does.
type FieldError struct {
	Kind FieldErrorKind
	// Field is the rendered field path.
	Field string
	// Detail is what follows the kind in the message: the bad value, rendered, and the reason
	// ("-1: must be greater than or equal to 0").
	Detail string
}

// NewFieldError is a field error of any kind with a detail written by hand.
func NewFieldError(kind FieldErrorKind, field FieldPath, detail string) FieldError {
	return FieldError{Kind: kind, Field: field.String(), Detail: detail}
}

// Message is the error as a Status cause's message shows it: "Invalid value: -1: must be
// greater than or equal to 0".
func (e FieldError) Message() string {
	head := map[FieldErrorKind]string{
		KindRequired: "Required value", KindInvalid: "Invalid value", KindForbidden: "Forbidden",
		KindDuplicate: "Duplicate value", KindNotSupported: "Unsupported value",
		KindTooLong: "Too long", KindTooMany: "Too many",
	}[e.Kind]
	if e.Detail == "" {
		return head
	}
	return head + ": " + e.Detail
}

// Error is the error as kube-apiserver lists it: "spec.replicas: Invalid value: -1: must be
// greater than or equal to 0".
func (e FieldError) Error() string {
	if e.Field == "" {
		return e.Message()
	}
	return e.Field + ": " + e.Message()
}

// Required is "Required value[: detail]": a field that must be set is not.
func Required(field FieldPath, detail string) FieldError {
	return NewFieldError(KindRequired, field, detail)
}

// Invalid is "Invalid value: <value>: detail": the value is malformed or out of range. The
// value is rendered as RenderValue renders it.
func Invalid(field FieldPath, value any, detail string) FieldError {
	return NewFieldError(KindInvalid, field, withValue(value, detail))
}

// Immutable is Kubernetes' "Invalid value: <value>: field is immutable", for a field an update
// may not change; value is the new value.
func Immutable(field FieldPath, value any) FieldError {
	return Invalid(field, value, "field is immutable")
}

// Forbidden is "Forbidden: detail": the field may not be set, or not by this request.
func Forbidden(field FieldPath, detail string) FieldError {
	return NewFieldError(KindForbidden, field, detail)
}

// Duplicate is "Duplicate value: <value>": the value repeats one that must be unique.
func Duplicate(field FieldPath, value any) FieldError {
	return NewFieldError(KindDuplicate, field, RenderValue(value))
}

// NotSupported is `Unsupported value: <value>: supported values: "a", "b"`: the value is not
// one of valid.
func NotSupported[T ~string](field FieldPath, value any, valid []T) FieldError {
	detail := ""
	for i, v := range valid {
		if i == 0 {
			detail = "supported values: "
		} else {
			detail += ", "
		}
		detail += strconv.Quote(string(v))
	}
	return NewFieldError(KindNotSupported, field, withValue(value, detail))
}

// TooLong is "Too long: may not be more than <maxLength> bytes" (the value is not shown);
// a negative maxLength says only "value is too long".
func TooLong(field FieldPath, maxLength int) FieldError {
	detail := "value is too long"
	if maxLength >= 0 {
		detail = fmt.Sprintf("may not be more than %d %s", maxLength, plural(maxLength, "byte"))
	}
	return NewFieldError(KindTooLong, field, detail)
}

// TooMany is "Too many: <actual>: must have at most <max> items": a list or map holds too many
// entries; a negative actual leaves the count out, a negative max says "has too many items".
func TooMany(field FieldPath, actual, max int) FieldError {
	detail := "has too many items"
	if max >= 0 {
		detail = fmt.Sprintf("must have at most %d %s", max, plural(max, "item"))
	}
	if actual >= 0 {
		detail = strconv.Itoa(actual) + ": " + detail
	}
	return NewFieldError(KindTooMany, field, detail)
}

func withValue(value any, detail string) string {
	if detail == "" {
		return RenderValue(value)
	}
	return RenderValue(value) + ": " + detail
}

func plural(n int, unit string) string {
	if n == 1 {
		return unit
	}
	return unit + "s"
}
