package sdk_test

import (
	"encoding/json"
	"os"
	"testing"

	"strategyhost.dev/sdk"
)

// The renderings the Rust SDK's tests check too (guest-sdk/testdata/field_values.json): the
// same bad value reads the same from a module in either language.
func TestValuesRenderAsTheSharedTableSays(t *testing.T) {
	data, err := os.ReadFile("../testdata/field_values.json")
	if err != nil {
		t.Fatal(err)
	}
	var table []map[string]any
	if err := sdk.DecodeJSON(data, &table); err != nil {
		t.Fatal(err)
	}
	for _, c := range table {
		var value any = c["value"]
		if f, ok := c["float32"].(json.Number); ok {
			x, _ := f.Float64()
			value = float32(x)
		} else if m, ok := c["stringMap"].(map[string]any); ok {
			labels := map[string]string{}
			for k, v := range m {
				labels[k] = v.(string)
			}
			value = labels
		}
		if got := sdk.RenderValue(value); got != c["rendered"] {
			t.Errorf("%#v rendered %s, want %s", value, got, c["rendered"])
		}
	}
}

func TestConstructorsWordErrorsAsKubernetes(t *testing.T) {
	replicas := sdk.NewFieldPath("spec").Child("replicas")
	region := sdk.NewFieldPath("spec").Child("region")
	cases := map[string]sdk.FieldError{
		"spec.replicas: Invalid value: -1: must be greater than or equal to 0": sdk.Invalid(replicas, int32(-1), "must be greater than or equal to 0"),
		`spec.region: Unsupported value: "mars": supported values: "eu", "us"`: sdk.NotSupported(region, "mars", []string{"eu", "us"}),
		`spec.region: Invalid value: "us": field is immutable`:                 sdk.Immutable(region, "us"),
		"spec.region: Required value":                                          sdk.Required(region, ""),
		"spec.region: Forbidden: may not be set":                               sdk.Forbidden(region, "may not be set"),
		`spec.region: Duplicate value: "eu"`:                                   sdk.Duplicate(region, "eu"),
		"spec.region: Too long: may not be more than 63 bytes":                 sdk.TooLong(region, 63),
		"spec.region: Too long: may not be more than 1 byte":                   sdk.TooLong(region, 1),
		"spec.region: Too many: 12: must have at most 10 items":                sdk.TooMany(region, 12, 10),
		"spec.region: Too many: must have at most 1 item":                      sdk.TooMany(region, -1, 1),
		"spec.replicas: Invalid value: null: must be set":                      sdk.Invalid(replicas, (*int64)(nil), "must be set"),
	}
	for want, e := range cases {
		if got := e.Error(); got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}
