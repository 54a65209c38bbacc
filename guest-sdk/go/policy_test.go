package sdk_test

import (
	"encoding/json"
	"strings"
	"testing"

	"strategyhost.dev/sdk"
	"strategyhost.dev/sdk/abi"
	"strategyhost.dev/sdk/sdktest"
)

// noLatest refuses images tagged latest, defaults a missing image, and warns about untagged ones.
type noLatest struct{}

func (noLatest) Mutate(_ *sdk.Context, r *sdk.AdmissionRequest[map[string]any]) {
	spec, _ := (*r.Object)["spec"].(map[string]any)
	if spec != nil && spec["image"] == nil {
		spec["image"] = "nginx:1.27"
	}
}

func (noLatest) Validate(_ *sdk.Context, r *sdk.AdmissionRequest[map[string]any]) []sdk.FieldError {
	image, _ := specImage(*r.Object).(string)
	if strings.HasSuffix(image, ":latest") {
		return []sdk.FieldError{sdk.Invalid(sdk.NewFieldPath("spec").Child("image"), image, "must not use :latest")}
	}
	return nil
}

func (noLatest) Warnings(_ *sdk.Context, r *sdk.AdmissionRequest[map[string]any]) []string {
	image, _ := specImage(*r.Object).(string)
	if !strings.Contains(image, ":") {
		return []string{"spec.image has no tag"}
	}
	return nil
}

// specImage is obj's spec.image, or nil.
func specImage(obj map[string]any) any {
	spec, _ := obj["spec"].(map[string]any)
	return spec["image"]
}

func noLatestPolicy() sdk.Policy[map[string]any] {
	return sdk.Policy[map[string]any]{
		Name: "no-latest",
		Match: sdk.MatchResources{
			ResourceRules: []sdk.Rule{{Operations: []string{"CREATE", "UPDATE"}, APIGroups: []string{"*"},
				APIVersions: []string{"*"}, Resources: []string{"*"}, Scope: sdk.NamespacedScope}},
			NamespaceSelector: sdk.LabelSelector{MatchExpressions: []sdk.LabelRequirement{
				{Key: "kubernetes.io/metadata.name", Operator: "NotIn", Values: []string{"kube-system"}}}},
		},
		MatchConditions: []sdk.MatchCondition{{Name: "not-dry-run", Expression: "!request.dryRun"}},
		Actions:         []sdk.ValidationAction{sdk.ActionDeny, sdk.ActionAudit},
		Impl:            noLatest{},
	}
}

func TestAPolicyManifestDeclaresItsMatchAsKubernetesWritesIt(t *testing.T) {
	m, err := sdktest.For(sdk.NewPolicyHandler(noLatestPolicy())).Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Resources) != 0 || m.ABIMinorVersion != sdk.ABIMinorVersion {
		t.Errorf("resources %v, minor version %d", m.Resources, m.ABIMinorVersion)
	}
	if got := m.Operations; len(got) != 2 || got[0] != abi.OperationAdmitMutate || got[1] != abi.OperationAdmitValidate {
		t.Errorf("operations %v: a policy with Mutate is asked in both phases", got)
	}
	p := m.AdmissionPolicy
	if p == nil || p.FailurePolicy != "Fail" || strings.Join(p.ValidationActions, ",") != "Deny,Audit" ||
		len(p.MatchConditions) != 1 || p.MatchConditions[0].Expression != "!request.dryRun" {
		t.Fatalf("declaration %+v", p)
	}
	var match map[string]any
	if err := json.Unmarshal(p.MatchResources, &match); err != nil {
		t.Fatal(err)
	}
	want := `{"excludeResourceRules":[],"matchPolicy":"Equivalent",` +
		`"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system"]}],"matchLabels":{}},` +
		`"objectSelector":{"matchExpressions":[],"matchLabels":{}},` +
		`"resourceRules":[{"apiGroups":["*"],"apiVersions":["*"],"operations":["CREATE","UPDATE"],"resources":["*"],"scope":"Namespaced"}]}`
	if got, _ := json.Marshal(match); string(got) != want {
		t.Errorf("matchResources\n got %s\nwant %s", got, want)
	}
}

func TestAValidateOnlyPolicyIsAskedOnlyToValidate(t *testing.T) {
	p := noLatestPolicy()
	p.Impl = struct {
		sdk.AdmissionValidator[map[string]any]
	}{noLatest{}}
	m, _ := sdktest.For(sdk.NewPolicyHandler(p)).Manifest()
	if len(m.Operations) != 1 || m.Operations[0] != abi.OperationAdmitValidate {
		t.Errorf("operations %v", m.Operations)
	}
}

func TestAPolicyMutatesValidatesAndWarnsThroughTheABI(t *testing.T) {
	h := sdktest.For(sdk.NewPolicyHandler(noLatestPolicy()))
	write := func(image any) sdktest.Write {
		spec := map[string]any{}
		if image != nil {
			spec["image"] = image
		}
		return sdktest.Write{Operation: sdk.AdmissionCreate, Namespace: "default", Name: "web",
			Object: map[string]any{"metadata": map[string]any{"name": "web"}, "spec": spec}}
	}
	mutated, err := h.Mutate(write(nil))
	if err != nil || specImage(mutated) != "nginx:1.27" {
		t.Errorf("mutated %v, %v", mutated, err)
	}
	errs, warnings, err := h.Admit(write("nginx:latest"))
	if err != nil || sdktest.Shown(errs) != `spec.image: Invalid value: "nginx:latest": must not use :latest` || warnings != nil {
		t.Errorf("refused with %q, warnings %v, %v", sdktest.Shown(errs), warnings, err)
	}
	errs, warnings, err = h.Admit(write("nginx"))
	if err != nil || errs != nil || len(warnings) != 1 {
		t.Errorf("admitted with errors %v, warnings %v, %v", errs, warnings, err)
	}
	deleted := sdktest.Write{Operation: sdk.AdmissionDelete, Name: "web", OldObject: map[string]any{}}
	if _, _, err := sdktest.For(sdk.NewPolicyHandler(sdk.Policy[map[string]any]{Name: "x",
		Match: noLatestPolicy().Match, Impl: struct{}{}})).Admit(deleted); err != nil {
		t.Errorf("a delete with no object: %v", err)
	}
}

func TestAPolicyRefusesWhatItIsNotAskedAndBadRequests(t *testing.T) {
	h := sdktest.For(sdk.NewPolicyHandler(noLatestPolicy()))
	if _, _, _, err := h.Create(map[string]any{}); err == nil || err.Error() != "an admission policy is only asked to admit" {
		t.Errorf("a create phase: %v", err)
	}
	if _, _, err := h.Admit(sdktest.Write{Operation: "CONNECT"}); err == nil || !strings.Contains(err.Error(), `unknown admission operation "CONNECT"`) {
		t.Errorf("CONNECT: %v", err)
	}
	if _, _, err := h.Admit(sdktest.Write{Operation: sdk.AdmissionCreate, Object: "[1"}); err == nil || !strings.HasPrefix(err.Error(), "the object did not decode") {
		t.Errorf("bad JSON: %v", err)
	}
}

type badPolicyHook struct{}

func (badPolicyHook) Validate(_ *sdk.Context, _ *map[string]any) []sdk.FieldError { return nil }

func TestAPolicyHookOfTheWrongSignaturePanics(t *testing.T) {
	defer func() {
		if v := recover(); v == nil || !strings.Contains(v.(string), "which is not the hook Validate") {
			t.Errorf("panic %v", v)
		}
	}()
	p := noLatestPolicy()
	p.Impl = badPolicyHook{}
	sdk.NewPolicyHandler(p)
}

func TestAnAuthorizerAnswersThroughTheABI(t *testing.T) {
	h := sdktest.For(sdk.NewAuthorizerHandler(sdk.Authorizer{
		Name:          "protect-production",
		FailurePolicy: sdk.AuthorizerDeny,
		Authorize: func(_ *sdk.Context, r *sdk.AccessRequest) sdk.Decision {
			switch {
			case r.Resource == nil:
				return sdk.NoOpinion()
			case r.Resource.Namespace == "production" && r.Resource.Verb == "delete" && !r.InGroup("sre"):
				return sdk.Deny("only SREs delete in production")
			case r.InGroup("sre"):
				return sdk.Allow("an SRE")
			}
			return sdk.NoOpinion()
		},
	}))
	m, _ := h.Manifest()
	if m.Authorizer == nil || m.Authorizer.FailurePolicy != "Deny" || len(m.Operations) != 1 || m.Operations[0] != abi.OperationAuthorize {
		t.Fatalf("manifest %+v", m)
	}
	for _, c := range []struct {
		spec            string
		allowed, denied bool
		reason          string
	}{
		{`{"user":"jane","resourceAttributes":{"namespace":"production","verb":"delete","resource":"pods"}}`, false, true, "only SREs delete in production"},
		{`{"user":"sam","groups":["sre"],"resourceAttributes":{"namespace":"production","verb":"delete"}}`, true, false, "an SRE"},
		{`{"user":"jane","nonResourceAttributes":{"path":"/healthz","verb":"get"}}`, false, false, ""},
	} {
		allowed, denied, reason, err := h.Authorize(c.spec)
		if err != nil || allowed != c.allowed || denied != c.denied || reason != c.reason {
			t.Errorf("%s: allowed %v denied %v reason %q, %v", c.spec, allowed, denied, reason, err)
		}
	}
	if _, _, _, err := h.Authorize(`{"user":1}`); err == nil || !strings.HasPrefix(err.Error(), "the spec did not decode") {
		t.Errorf("a bad spec: %v", err)
	}
}
