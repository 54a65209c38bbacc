package main

import (
	"encoding/json"
	"errors"

	"strategyhost.dev/sdk"
)

// Deployments is the strategy. It works on an sdk.LazyObject, as the Rust module does: a call
// parses only the members it reads (spec's few fields, the template's labels), never the pod
// template's containers, and answers the host with its defaults alone (ABI 1.4).
type Deployments struct{}

const (
	rolling  = "RollingUpdate"
	recreate = "Recreate"
)

// PrepareForCreate clears the status and fills the defaults.
func (Deployments) PrepareForCreate(_ *sdk.Context, obj *sdk.LazyObject) {
	obj.Remove("status")
	// A spec that is not an object is left for Validate to refuse.
	spec := obj.Object("spec")
	if spec == nil {
		return
	}
	spec.SetIfAbsent("replicas", 1)
	spec.SetIfAbsent("revisionHistoryLimit", 10)
	spec.SetIfAbsent("progressDeadlineSeconds", 600)
	strategy := spec.Object("strategy")
	if strategy == nil {
		return
	}
	strategy.SetIfAbsent("type", rolling)
	if kind, _ := strategy.StringAt("type"); kind == rolling {
		if update := strategy.Object("rollingUpdate"); update != nil {
			update.SetIfAbsent("maxUnavailable", "25%")
			update.SetIfAbsent("maxSurge", "25%")
		}
	}
}

// Validate checks replicas, the selector against the template's labels, and the rollout
// strategy.
func (Deployments) Validate(_ *sdk.Context, obj *sdk.LazyObject) []sdk.FieldError {
	spec := sdk.NewFieldPath("spec")
	var errs []sdk.FieldError
	replicas, err := obj.Raw("spec", "replicas")
	switch {
	case err != nil:
		value, _ := obj.Raw("spec")
		return []sdk.FieldError{sdk.Invalid(spec, decoded(value), "must be an object")}
	case replicas == nil:
		errs = append(errs, sdk.Required(spec.Child("replicas"), "replicas is required"))
	default:
		if n, ok := rawI64(replicas); !ok {
			errs = append(errs, sdk.Invalid(spec.Child("replicas"), decoded(replicas), "must be an integer"))
		} else if n < 0 {
			errs = append(errs, sdk.Invalid(spec.Child("replicas"), n, "must be greater than or equal to 0"))
		}
	}
	// Field paths are built only for the errors that need them (a string concatenation each).
	labelsPath := func() sdk.FieldPath { return spec.Child("template").Child("metadata").Child("labels") }
	labels, err := obj.StringMapAt("spec", "template", "metadata", "labels")
	if err != nil {
		errs = append(errs, malformed(labelsPath(), err))
	}
	switch sel, err := selector(obj); {
	case err != nil:
		errs = append(errs, malformed(spec.Child("selector"), err))
	case sel == nil:
		errs = append(errs, sdk.Required(spec.Child("selector"), "selector is required"))
	case len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0:
		errs = append(errs, sdk.Invalid(spec.Child("selector"), sel, "empty selector is invalid for deployment"))
	default:
		for k, v := range sel.MatchLabels {
			if got, ok := labels[k]; !ok || got != v {
				// A nil map is shown as null, as the Rust module shows an absent one.
				var shown any
				if labels != nil {
					shown = labels
				}
				errs = append(errs, sdk.Invalid(labelsPath(), shown, "`selector` does not match template `labels`"))
				break
			}
		}
	}
	kind, err := obj.StringAt("spec", "strategy", "type")
	switch {
	case err != nil:
		errs = append(errs, malformed(spec.Child("strategy").Child("type"), err))
	case kind == "" || kind == rolling:
	case kind == recreate:
		if obj.Has("spec", "strategy", "rollingUpdate") {
			errs = append(errs, sdk.Forbidden(spec.Child("strategy").Child("rollingUpdate"),
				"may not be specified when strategy `type` is 'Recreate'"))
		}
	default:
		errs = append(errs, sdk.NotSupported(spec.Child("strategy").Child("type"), kind, []string{recreate, rolling}))
	}
	return errs
}

// PrepareForUpdate keeps the status: a main-resource update never changes it (the status
// subresource does).
func (Deployments) PrepareForUpdate(_ *sdk.Context, newObj, old *sdk.LazyObject) {
	newObj.CopyMember(old, "status")
}

// ValidateUpdate validates the new object and keeps the selector immutable.
func (d Deployments) ValidateUpdate(ctx *sdk.Context, newObj, old *sdk.LazyObject) []sdk.FieldError {
	errs := d.Validate(ctx, newObj)
	newSelector, _ := selector(newObj)
	oldSelector, _ := selector(old)
	if !selectorsEqual(newSelector, oldSelector) {
		var shown any
		if newSelector != nil {
			shown = newSelector
		}
		errs = append(errs, sdk.Immutable(sdk.NewFieldPath("spec").Child("selector"), shown))
	}
	return errs
}

// read decodes the value at path with decode; the zero value when it is absent or null.
func read[T any](obj *sdk.LazyObject, decode func([]byte) (T, error), path ...string) (T, error) {
	var zero T
	raw, err := obj.Raw(path...)
	if err != nil || raw == nil {
		return zero, err
	}
	return decode(raw)
}

// selector is spec.selector, nil when absent.
func selector(obj *sdk.LazyObject) (*LabelSelector, error) {
	return read(obj, func(raw []byte) (*LabelSelector, error) {
		sel := &LabelSelector{}
		return sel, sel.UnmarshalJSON(raw)
	}, "spec", "selector")
}

// decoded is a member's JSON as a value to show in a field error (nil when absent); a number
// as its text, which is all replicas usually is.
func decoded(raw []byte) any {
	var v any
	switch {
	case raw == nil:
	case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
		v = json.Number(raw)
	default:
		_ = sdk.DecodeJSON(raw, &v)
	}
	return v
}

// malformed is a member of the wrong type: the reason the read gives, with no value to show
// (the member did not decode).
func malformed(path sdk.FieldPath, err error) sdk.FieldError {
	var member *sdk.MemberError
	if errors.As(err, &member) {
		return sdk.NewFieldError(sdk.KindInvalid, path, member.Reason)
	}
	return sdk.NewFieldError(sdk.KindInvalid, path, err.Error())
}
