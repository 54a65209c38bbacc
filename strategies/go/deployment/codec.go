package main

import (
	"bytes"
	"strconv"
	"strings"

	"strategyhost.dev/sdk"
)

// How the objects decode and encode: as the Rust module's serde structs do, so both modules
// accept, refuse and write the same objects. The rules that matter:
//   - Deployment, DeploymentSpec, PodTemplate and ObjectMeta keep the members they do not name
//     (serde's flatten); LabelSelector and RolloutStrategy drop them;
//   - a named member given twice is an error; a member absent takes its default, so a missing
//     metadata, spec or template is written back as {} ({"metadata": {}} for a template);
//   - null is None for the optional members (replicas, selector, strategy, the two limits, type,
//     rollingUpdate) and for status, and an error for the others (metadata, spec, template,
//     matchLabels, matchExpressions, and ObjectMeta's strings and maps);
//   - LabelSelector and RolloutStrategy may also be given as arrays of their members in order
//     (serde accepts a sequence for a struct without flatten);
//   - optional members are left out when None, as are an empty matchLabels, matchExpressions,
//     and ObjectMeta's empty name, namespace, labels and annotations.

// UnmarshalJSON decodes a Deployment.
func (d *Deployment) UnmarshalJSON(data []byte) error {
	*d = Deployment{}
	rest, err := sdk.DecodeObject(data, "struct Deployment", []string{"metadata", "spec", "status"},
		func(name string, raw []byte) error {
			switch name {
			case "metadata":
				return d.Metadata.UnmarshalJSON(raw)
			case "spec":
				return d.Spec.UnmarshalJSON(raw)
			}
			return sdk.DecodeJSON(raw, &d.Status)
		})
	d.Rest = rest
	return err
}

// MarshalJSON encodes a Deployment: metadata, spec, status (unless null), then the rest.
func (d Deployment) MarshalJSON() ([]byte, error) {
	members := []sdk.Member{{Name: "metadata", Value: d.Metadata}, {Name: "spec", Value: d.Spec}}
	if d.Status != nil {
		members = append(members, sdk.Member{Name: "status", Value: d.Status})
	}
	return sdk.JoinObject(members, d.Rest)
}

// UnmarshalJSON decodes spec.
func (s *DeploymentSpec) UnmarshalJSON(data []byte) error {
	*s = DeploymentSpec{}
	names := []string{"replicas", "selector", "template", "strategy", "revisionHistoryLimit", "progressDeadlineSeconds"}
	rest, err := sdk.DecodeObject(data, "struct DeploymentSpec", names, func(name string, raw []byte) (err error) {
		switch name {
		case "replicas":
			s.Replicas = nil
			err = sdk.DecodeJSON(raw, &s.Replicas)
		case "selector":
			if !isNull(raw) {
				s.Selector = &LabelSelector{}
				err = s.Selector.UnmarshalJSON(raw)
			}
		case "template":
			err = s.Template.UnmarshalJSON(raw)
		case "strategy":
			if !isNull(raw) {
				s.Strategy = &RolloutStrategy{}
				err = s.Strategy.UnmarshalJSON(raw)
			}
		case "revisionHistoryLimit":
			s.RevisionHistoryLimit, err = optionalI64(raw)
		case "progressDeadlineSeconds":
			s.ProgressDeadlineSeconds, err = optionalI64(raw)
		}
		return err
	})
	s.Rest = rest
	return err
}

// MarshalJSON encodes spec.
func (s DeploymentSpec) MarshalJSON() ([]byte, error) {
	var members []sdk.Member
	if s.Replicas != nil {
		members = append(members, sdk.Member{Name: "replicas", Value: s.Replicas})
	}
	if s.Selector != nil {
		members = append(members, sdk.Member{Name: "selector", Value: s.Selector})
	}
	members = append(members, sdk.Member{Name: "template", Value: s.Template})
	if s.Strategy != nil {
		members = append(members, sdk.Member{Name: "strategy", Value: s.Strategy})
	}
	if s.RevisionHistoryLimit != nil {
		members = append(members, sdk.Member{Name: "revisionHistoryLimit", Value: *s.RevisionHistoryLimit})
	}
	if s.ProgressDeadlineSeconds != nil {
		members = append(members, sdk.Member{Name: "progressDeadlineSeconds", Value: *s.ProgressDeadlineSeconds})
	}
	return sdk.JoinObject(members, s.Rest)
}

// UnmarshalJSON decodes a label selector, from an object or an array of its members.
func (l *LabelSelector) UnmarshalJSON(data []byte) error {
	*l = LabelSelector{}
	return structMembers(data, "struct LabelSelector", []string{"matchLabels", "matchExpressions"},
		func(name string, raw []byte) (err error) {
			if name == "matchLabels" {
				l.MatchLabels, err = sdk.DecodeStringMap(raw)
				return err
			}
			if raw = bytes.TrimSpace(raw); raw[0] != '[' {
				return sdk.TypeError(raw, "a sequence")
			}
			return sdk.DecodeJSON(raw, &l.MatchExpressions)
		})
}

// MarshalJSON encodes a label selector, leaving out empty members.
func (l LabelSelector) MarshalJSON() ([]byte, error) {
	var members []sdk.Member
	if len(l.MatchLabels) > 0 {
		members = append(members, sdk.Member{Name: "matchLabels", Value: l.MatchLabels})
	}
	if len(l.MatchExpressions) > 0 {
		members = append(members, sdk.Member{Name: "matchExpressions", Value: l.MatchExpressions})
	}
	return sdk.JoinObject(members, nil)
}

// UnmarshalJSON decodes the pod template.
func (p *PodTemplate) UnmarshalJSON(data []byte) error {
	*p = PodTemplate{}
	rest, err := sdk.DecodeObject(data, "struct PodTemplate", []string{"metadata"}, func(_ string, raw []byte) error {
		return p.Metadata.UnmarshalJSON(raw)
	})
	p.Rest = rest
	return err
}

// MarshalJSON encodes the pod template: metadata, then the rest.
func (p PodTemplate) MarshalJSON() ([]byte, error) {
	return sdk.JoinObject([]sdk.Member{{Name: "metadata", Value: p.Metadata}}, p.Rest)
}

// UnmarshalJSON decodes spec.strategy, from an object or an array of its members.
func (r *RolloutStrategy) UnmarshalJSON(data []byte) error {
	*r = RolloutStrategy{}
	return structMembers(data, "struct RolloutStrategy", []string{"type", "rollingUpdate"},
		func(name string, raw []byte) error {
			if isNull(raw) {
				return nil
			}
			if name == "type" {
				s, err := sdk.DecodeString(raw)
				r.Type = &s
				return err
			}
			if raw = bytes.TrimSpace(raw); raw[0] != '{' {
				return sdk.TypeError(raw, "a map")
			}
			r.RollingUpdate = nil
			return sdk.DecodeJSON(raw, &r.RollingUpdate)
		})
}

// MarshalJSON encodes spec.strategy, leaving out absent members.
func (r RolloutStrategy) MarshalJSON() ([]byte, error) {
	var members []sdk.Member
	if r.Type != nil {
		members = append(members, sdk.Member{Name: "type", Value: *r.Type})
	}
	if r.RollingUpdate != nil {
		members = append(members, sdk.Member{Name: "rollingUpdate", Value: r.RollingUpdate})
	}
	return sdk.JoinObject(members, nil)
}

// structMembers reads the members of a struct serde decodes without flatten, in order: from an
// object (other members ignored, a named one given twice refused), or from an array holding
// them in order (missing ones absent, extra ones refused).
func structMembers(data []byte, expecting string, names []string, decode func(name string, raw []byte) error) error {
	if data = bytes.TrimSpace(data); len(data) > 0 && data[0] == '[' {
		return sdk.DecodeArray(data, expecting, len(names), func(i int, raw []byte) error {
			return decode(names[i], raw)
		})
	}
	_, err := sdk.DecodeObject(data, expecting, names, decode)
	return err
}

// optionalI64 decodes an Option<i64>: null is absent; an integer must fit in an i64 (a float,
// -0 included, is refused).
func optionalI64(raw []byte) (*int64, error) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return nil, nil
	}
	text := string(raw)
	if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') && !strings.ContainsAny(text, ".eE") {
		if u, err := strconv.ParseUint(text, 10, 64); err == nil {
			if u > 1<<63-1 {
				return nil, sdk.ErrorAt(raw, "invalid value: integer `"+text+"`, expected i64")
			}
			return ptr(int64(u)), nil
		}
		if i, err := strconv.ParseInt(text, 10, 64); err == nil && i < 0 {
			return &i, nil
		}
	}
	return nil, sdk.TypeError(raw, "i64")
}

func isNull(raw []byte) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}
