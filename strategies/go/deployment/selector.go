package main

import (
	"bytes"

	"strategyhost.dev/sdk"
)

// LabelSelector is spec.selector, read whole to compare it with the template's labels and with
// the old one. It decodes as the Rust module's serde struct does (with serde's errors), and is
// shown in field errors without its empty members.
type LabelSelector struct {
	// MatchLabels are labels a pod must carry.
	MatchLabels map[string]string
	// MatchExpressions are set-based requirements.
	MatchExpressions []any
}

// UnmarshalJSON decodes a label selector, from an object (other members ignored, a named one
// given twice refused) or from an array of its members in order, as serde decodes a struct.
func (l *LabelSelector) UnmarshalJSON(data []byte) error {
	*l = LabelSelector{}
	decode := func(name string, raw []byte) (err error) {
		if name == "matchLabels" {
			l.MatchLabels, err = sdk.DecodeStringMap(raw)
			return err
		}
		if raw = bytes.TrimSpace(raw); raw[0] != '[' {
			return sdk.TypeError(raw, "a sequence")
		}
		return sdk.DecodeJSON(raw, &l.MatchExpressions)
	}
	names := []string{"matchLabels", "matchExpressions"}
	const expecting = "struct LabelSelector"
	if data = bytes.TrimSpace(data); len(data) > 0 && data[0] == '[' {
		return sdk.DecodeArray(data, expecting, len(names), func(i int, raw []byte) error {
			return decode(names[i], raw)
		})
	}
	_, err := sdk.DecodeObject(data, expecting, names, decode)
	return err
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
