package sdk

import (
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

// FieldError is one field error: which field, what kind, and why.
type FieldError struct {
	Kind FieldErrorKind
	// Field is the rendered field path.
	Field string
	// Detail is a human-readable detail.
	Detail string
}

// NewFieldError is a field error of any kind.
func NewFieldError(kind FieldErrorKind, field FieldPath, detail string) FieldError {
	return FieldError{Kind: kind, Field: field.String(), Detail: detail}
}

// Required is a Required error.
func Required(field FieldPath, detail string) FieldError {
	return NewFieldError(KindRequired, field, detail)
}

// Invalid is an Invalid error.
func Invalid(field FieldPath, detail string) FieldError {
	return NewFieldError(KindInvalid, field, detail)
}

// Forbidden is a Forbidden error.
func Forbidden(field FieldPath, detail string) FieldError {
	return NewFieldError(KindForbidden, field, detail)
}

// Duplicate is a Duplicate error.
func Duplicate(field FieldPath, detail string) FieldError {
	return NewFieldError(KindDuplicate, field, detail)
}

// NotSupported is a NotSupported error.
func NotSupported(field FieldPath, detail string) FieldError {
	return NewFieldError(KindNotSupported, field, detail)
}

// TooLong is a TooLong error.
func TooLong(field FieldPath, detail string) FieldError {
	return NewFieldError(KindTooLong, field, detail)
}

// TooMany is a TooMany error.
func TooMany(field FieldPath, detail string) FieldError {
	return NewFieldError(KindTooMany, field, detail)
}
