package main

import (
	"encoding/json"

	"strategyhost.dev/sdk"
)

// Deployment is the workload object; members it does not name are kept in Rest.
type Deployment struct {
	Metadata sdk.ObjectMeta
	// Spec is the desired state.
	Spec DeploymentSpec
	// Status is the observed state, written only through the status subresource; nil (JSON
	// null) is left out.
	Status any
	// Rest is apiVersion, kind and anything else.
	Rest map[string]any
}

// DeploymentSpec is spec of a Deployment.
type DeploymentSpec struct {
	// Replicas is the desired pod count, kept as JSON (nil: absent) so a wrong type is a field
	// error, not a decode failure.
	Replicas any
	// Selector says which pods belong to the workload (nil: absent).
	Selector *LabelSelector
	// Template is the pod template.
	Template PodTemplate
	// Strategy is how pods are replaced (nil: absent).
	Strategy *RolloutStrategy
	// RevisionHistoryLimit is how many old revisions are kept (nil: absent).
	RevisionHistoryLimit *int64
	// ProgressDeadlineSeconds is how long before a stalled rollout is reported (nil: absent).
	ProgressDeadlineSeconds *int64
	// Rest is every other member.
	Rest map[string]any
}

// LabelSelector is a label selector. Members it does not name are dropped.
type LabelSelector struct {
	// MatchLabels are labels a pod must carry.
	MatchLabels map[string]string
	// MatchExpressions are set-based requirements.
	MatchExpressions []any
}

// PodTemplate is the pod template.
type PodTemplate struct {
	Metadata sdk.ObjectMeta
	// Rest is spec and anything else.
	Rest map[string]any
}

// RolloutStrategy is spec.strategy. Members it does not name are dropped.
type RolloutStrategy struct {
	// Type is RollingUpdate or Recreate (nil: absent).
	Type *string
	// RollingUpdate holds the parameters of a rolling update (nil: absent; empty: {}).
	RollingUpdate map[string]any
}

// Deployments is the strategy.
type Deployments struct{}

const (
	rolling  = "RollingUpdate"
	recreate = "Recreate"
)

// PrepareForCreate clears the status and fills the defaults.
func (Deployments) PrepareForCreate(_ *sdk.Context, d *Deployment) {
	d.Status = nil
	spec := &d.Spec
	if spec.Replicas == nil {
		spec.Replicas = json.Number("1")
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr(int64(10))
	}
	if spec.ProgressDeadlineSeconds == nil {
		spec.ProgressDeadlineSeconds = ptr(int64(600))
	}
	if spec.Strategy == nil {
		spec.Strategy = &RolloutStrategy{}
	}
	strategy := spec.Strategy
	if strategy.Type == nil {
		strategy.Type = ptr(rolling)
	}
	if *strategy.Type == rolling {
		if strategy.RollingUpdate == nil {
			strategy.RollingUpdate = map[string]any{}
		}
		for _, key := range []string{"maxUnavailable", "maxSurge"} {
			if _, ok := strategy.RollingUpdate[key]; !ok {
				strategy.RollingUpdate[key] = "25%"
			}
		}
	}
}

// Validate checks replicas, the selector against the template's labels, and the rollout
// strategy.
func (Deployments) Validate(_ *sdk.Context, d *Deployment) []sdk.FieldError {
	spec := sdk.NewFieldPath("spec")
	var errs []sdk.FieldError
	if d.Spec.Replicas == nil {
		errs = append(errs, sdk.Required(spec.Child("replicas"), "replicas is required"))
	} else if n, ok := asI64(d.Spec.Replicas); !ok {
		errs = append(errs, sdk.Invalid(spec.Child("replicas"), d.Spec.Replicas, "must be an integer"))
	} else if n < 0 {
		errs = append(errs, sdk.Invalid(spec.Child("replicas"), n, "must be greater than or equal to 0"))
	}
	templateLabels := d.Spec.Template.Metadata.Labels
	switch sel := d.Spec.Selector; {
	case sel == nil:
		errs = append(errs, sdk.Required(spec.Child("selector"), "selector is required"))
	case len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0:
		errs = append(errs, sdk.Invalid(spec.Child("selector"), sel, "empty selector is invalid for deployment"))
	default:
		matches := true
		for k, v := range sel.MatchLabels {
			if got, ok := templateLabels[k]; !ok || got != v {
				matches = false
			}
		}
		if !matches {
			errs = append(errs, sdk.Invalid(spec.Child("template").Child("metadata").Child("labels"),
				templateLabels, "`selector` does not match template `labels`"))
		}
	}
	if strategy := d.Spec.Strategy; strategy != nil {
		path := spec.Child("strategy")
		switch {
		case strategy.Type == nil || *strategy.Type == rolling:
		case *strategy.Type == recreate && strategy.RollingUpdate != nil:
			errs = append(errs, sdk.Forbidden(path.Child("rollingUpdate"),
				"may not be specified when strategy `type` is 'Recreate'"))
		case *strategy.Type == recreate:
		default:
			errs = append(errs, sdk.NotSupported(path.Child("type"), *strategy.Type, []string{recreate, rolling}))
		}
	}
	return errs
}

// PrepareForUpdate keeps the status: a main-resource update never changes it (the status
// subresource does).
func (Deployments) PrepareForUpdate(_ *sdk.Context, newObj, old *Deployment) {
	newObj.Status = old.Status
}

// ValidateUpdate validates the new object and keeps the selector immutable.
func (d Deployments) ValidateUpdate(ctx *sdk.Context, newObj, old *Deployment) []sdk.FieldError {
	errs := d.Validate(ctx, newObj)
	if !selectorsEqual(newObj.Spec.Selector, old.Spec.Selector) {
		errs = append(errs, sdk.Immutable(sdk.NewFieldPath("spec").Child("selector"), newObj.Spec.Selector))
	}
	return errs
}

func ptr[T any](v T) *T { return &v }
