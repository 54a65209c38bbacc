package sdk

// The hooks: Strategy.Impl opts into each by having its method. A hook Impl lacks answers as
// Kubernetes does for custom resources (nothing changed, no errors, no warnings, create on
// update refused, unconditional update allowed, no conversion). NewHandler panics, when run
// natively (the strategy's go test), if Impl has a method of a hook's name with another
// signature, so a typo in a type is not silently a missing hook.

// PrepareForCreator clears what clients may not set and fills defaults on a new object.
type PrepareForCreator[T any] interface {
	PrepareForCreate(ctx *Context, obj *T)
}

// Validator validates a new object; any error fails the create with 422 Invalid.
type Validator[T any] interface {
	Validate(ctx *Context, obj *T) []FieldError
}

// CreateWarner answers warnings for the client on a create that passed validation.
type CreateWarner[T any] interface {
	WarningsOnCreate(ctx *Context, obj *T) []string
}

// Canonicalizer normalizes an object that passed validation, before it is stored (create and
// update).
type Canonicalizer[T any] interface {
	Canonicalize(ctx *Context, obj *T)
}

// PrepareForUpdater prepares new given old, e.g. keeps old's status on a main-resource update.
type PrepareForUpdater[T any] interface {
	PrepareForUpdate(ctx *Context, new, old *T)
}

// UpdateValidator validates an update (call your Validate from it to check new itself too).
type UpdateValidator[T any] interface {
	ValidateUpdate(ctx *Context, new, old *T) []FieldError
}

// UpdateWarner answers warnings for the client on an update that passed validation.
type UpdateWarner[T any] interface {
	WarningsOnUpdate(ctx *Context, new, old *T) []string
}

// CreateOnUpdateAllower says whether a PUT of a missing object creates it (asked once, when the
// module loads; default false).
type CreateOnUpdateAllower interface {
	AllowCreateOnUpdate() bool
}

// UnconditionalUpdateAllower says whether a PUT without a resourceVersion is accepted (asked
// once, when the module loads; default true).
type UnconditionalUpdateAllower interface {
	AllowUnconditionalUpdate() bool
}

// BeforeDeleter may refuse a deletion with field errors (422).
type BeforeDeleter[T any] interface {
	BeforeDelete(ctx *Context, obj *T) []FieldError
}

// AfterCreator runs after a create is committed. An error is logged and counted by the host;
// the write stays.
type AfterCreator[T any] interface {
	AfterCreate(ctx *Context, obj *T) error
}

// AfterUpdater runs after an update is committed.
type AfterUpdater[T any] interface {
	AfterUpdate(ctx *Context, new, old *T) error
}

// AfterDeleter runs after a delete is committed.
type AfterDeleter[T any] interface {
	AfterDelete(ctx *Context, obj *T) error
}

// Converter converts an object of the module's resources, at the version its apiVersion
// names, to desiredAPIVersion (group/version), as a conversion webhook would (ABI 1.3). It
// works on JSON rather than T: the object is at another version than the one the other hooks
// see. The host checks the answer as Kubernetes checks a webhook's (the apiVersion asked for,
// the same kind, only labels and annotations of the metadata changed), and a conversion must
// round-trip (sdktest.RoundTrip checks one).
type Converter interface {
	Convert(ctx *Context, obj map[string]any, desiredAPIVersion string) (map[string]any, error)
}
