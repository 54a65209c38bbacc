package sdk_test

import (
	"fmt"

	"strategyhost.dev/sdk"
	"strategyhost.dev/sdk/sdktest"
)

type widgets struct{}

func (widgets) PrepareForCreate(_ *sdk.Context, obj *map[string]any) {
	spec, _ := (*obj)["spec"].(map[string]any)
	if spec != nil && spec["size"] == nil {
		spec["size"] = 1
	}
}

func (widgets) Validate(_ *sdk.Context, obj *map[string]any) []sdk.FieldError {
	if _, ok := (*obj)["spec"].(map[string]any); !ok {
		return []sdk.FieldError{sdk.Required(sdk.NewFieldPath("spec"), "spec is required")}
	}
	return nil
}

func Example() {
	h := sdk.NewHandler(sdk.Strategy[map[string]any]{
		Name:      "widgets",
		Resources: []sdk.Resource{{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets", Scope: sdk.Namespaced}},
		Impl:      widgets{},
	})
	// A module calls sdk.Register(...) in an init instead; sdktest.Create then drives it.
	test := sdktest.For(h)

	obj, errs, _, _ := test.Create(`{"spec": {}}`)
	fmt.Println(obj["spec"], len(errs))

	_, errs, _, _ = test.Create(`{}`)
	fmt.Println(sdktest.Shown(errs))
	// Output:
	// map[size:1] 0
	// spec: Required value: spec is required
}

func ExampleFieldPath() {
	p := sdk.NewFieldPath("spec").Child("x").Index(0).Key("app")
	fmt.Println(p)
	fmt.Println(sdk.Invalid(p.Child("name"), "a-very-long-name", "must be short"))
	// Output:
	// spec.x[0][app]
	// spec.x[0][app].name: Invalid value: "a-very-long-name": must be short
}
