package abi

// Response is the answer to any Request.
type Response struct {
	// Object is the object after the operation, as JSON; empty when the operation does not
	// mutate.
	Object      []byte
	FieldErrors []FieldError
	Warnings    []string
	// Allowed answers allow_create_on_update and allow_unconditional_update.
	Allowed bool
	// Error says the guest could not perform the operation; the host fails the request.
	Error string
	// ConvertedObjects answers convert, in the request's order.
	ConvertedObjects [][]byte
	// ObjectPatch (ABI 1.4) is the operation's changes to the request's object as a JSON Patch,
	// instead of Object. This SDK answers whole objects; the field is read and written so that
	// tools built on it understand answers of modules that do send patches.
	ObjectPatch []byte
	// Denied and Reason (ABI 1.5) are an authorizer's answer beside Allowed: denied, and why.
	// This SDK writes no authorizers yet; the fields are read and written for tools.
	Denied bool
	Reason string
}

// FieldError is one field error.
type FieldError struct {
	Kind   FieldErrorKind
	Field  string
	Detail string
}

// Marshal encodes the response, into one buffer sized for its largest fields (growing one from
// nothing would copy the object or patch several times, in every call).
func (r *Response) Marshal() []byte {
	return marshalInto(make([]byte, 0, len(r.Object)+len(r.ObjectPatch)+len(r.Error)+64), r)
}

func (r *Response) encode(e *encoder) {
	e.bytes(responseObject, r.Object)
	for i := range r.FieldErrors {
		e.message(responseFieldErrors, &r.FieldErrors[i])
	}
	for _, w := range r.Warnings {
		e.stringElement(responseWarnings, w)
	}
	e.bool(responseAllowed, r.Allowed)
	e.string(responseError, r.Error)
	for _, o := range r.ConvertedObjects {
		e.element(responseConvertedObjects, o)
	}
	e.bytes(responseObjectPatch, r.ObjectPatch)
	e.bool(responseDenied, r.Denied)
	e.string(responseReason, r.Reason)
}

// Unmarshal decodes a response.
func (r *Response) Unmarshal(b []byte) error {
	*r = Response{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch f.num {
		case responseObject:
			r.Object = f.bytes()
		case responseFieldErrors:
			var fe FieldError
			f.message(&fe)
			r.FieldErrors = append(r.FieldErrors, fe)
		case responseWarnings:
			r.Warnings = append(r.Warnings, f.string())
		case responseAllowed:
			r.Allowed = f.bool()
		case responseError:
			r.Error = f.string()
		case responseConvertedObjects:
			r.ConvertedObjects = append(r.ConvertedObjects, f.bytes())
		case responseObjectPatch:
			r.ObjectPatch = f.bytes()
		case responseDenied:
			r.Denied = f.bool()
		case responseReason:
			r.Reason = f.string()
		}
	}
	return fields.err
}

func (fe *FieldError) encode(e *encoder) {
	e.enum(fieldErrorKind, int32(fe.Kind))
	e.string(fieldErrorField, fe.Field)
	e.string(fieldErrorDetail, fe.Detail)
}

// Unmarshal decodes a field error.
func (fe *FieldError) Unmarshal(b []byte) error {
	*fe = FieldError{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch f.num {
		case fieldErrorKind:
			fe.Kind = FieldErrorKind(f.enum())
		case fieldErrorField:
			fe.Field = f.string()
		case fieldErrorDetail:
			fe.Detail = f.string()
		}
	}
	return fields.err
}
