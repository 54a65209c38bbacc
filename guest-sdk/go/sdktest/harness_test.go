package sdktest_test

import (
	"testing"

	"strategyhost.dev/sdk"
	"strategyhost.dev/sdk/sdktest"
)

// lossy drops spec.extra on the way: not a lossless conversion.
type lossy struct{}

func (lossy) Convert(_ *sdk.Context, obj map[string]any, desired string) (map[string]any, error) {
	if spec, ok := obj["spec"].(map[string]any); ok {
		delete(spec, "extra")
	}
	obj["apiVersion"] = desired
	return obj, nil
}

// renaming calls it size in v1 and replicas in v2.
type renaming struct{}

func (renaming) Convert(_ *sdk.Context, obj map[string]any, desired string) (map[string]any, error) {
	from, to := "replicas", "size"
	if desired == "g.io/v2" {
		from, to = to, from
	}
	if spec, ok := obj["spec"].(map[string]any); ok {
		if v, ok := spec[from]; ok {
			delete(spec, from)
			spec[to] = v
		}
	}
	obj["apiVersion"] = desired
	return obj, nil
}

// stuck answers the version it was given.
type stuck struct{}

func (stuck) Convert(_ *sdk.Context, obj map[string]any, _ string) (map[string]any, error) {
	return obj, nil
}

func harness(impl any) *sdktest.Harness {
	return sdktest.For(sdk.NewHandler(sdk.Strategy[map[string]any]{
		Name:      "ks",
		Resources: []sdk.Resource{{Group: "g.io", Version: "v2", Kind: "K", Plural: "ks", Scope: sdk.Cluster}},
		Impl:      impl,
	}))
}

func TestRoundTrip(t *testing.T) {
	obj := `{"apiVersion": "g.io/v1", "kind": "K", "spec": {"a": 1, "extra": true, "size": 3}}`
	err := harness(lossy{}).RoundTrip(obj, "g.io/v2")
	if want := "g.io/v1 → g.io/v2 → g.io/v1 changed spec.extra: true became absent"; err == nil || err.Error() != want {
		t.Errorf("lossy: %v", err)
	}
	if err := harness(renaming{}).RoundTrip(obj, "g.io/v2"); err != nil {
		t.Errorf("renaming: %v", err)
	}
	err = harness(stuck{}).RoundTrip(obj, "g.io/v2")
	if want := `converting to g.io/v2 answered apiVersion "g.io/v1"`; err == nil || err.Error() != want {
		t.Errorf("stuck: %v", err)
	}
	err = harness(nil).RoundTrip(obj, "g.io/v2")
	if want := "converting to g.io/v2 failed: this module does not convert objects"; err == nil || err.Error() != want {
		t.Errorf("none: %v", err)
	}
}
