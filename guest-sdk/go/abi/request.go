package abi

// Request is one call into the guest. The arm of the `operation` oneof is Arm; the
// per-operation request messages (PrepareForCreateRequest ... BeforeUpdateRequest) carry at
// most an object and an old object, flattened here into Object and OldObject, while Admit,
// Convert and Authorize hold the arms with messages of their own.
type Request struct {
	Context *Context
	Arm     Arm
	// Object and OldObject are the JSON objects of the per-operation arms that have them.
	Object    []byte
	OldObject []byte
	// Admit is set when Arm is ArmAdmit.
	Admit *AdmitRequest
	// Convert is set when Arm is ArmConvert.
	Convert *ConvertRequest
	// Authorize is set when Arm is ArmAuthorize (ABI 1.5).
	Authorize *AuthorizeRequest
}

// AuthorizeRequest is what an authorizer decides about (ABI 1.5): a SubjectAccessReview's
// spec as JSON.
type AuthorizeRequest struct {
	Spec []byte
}

// AdmitRequest is one write, as an admission policy sees it.
type AdmitRequest struct {
	Phase       AdmissionPhase
	Operation   string
	Object      []byte
	OldObject   []byte
	Namespace   string
	Name        string
	Subresource string
}

// ConvertRequest is objects to convert to DesiredAPIVersion (ABI 1.3).
type ConvertRequest struct {
	Objects           [][]byte
	DesiredAPIVersion string
}

// ArmHasObject tells whether the arm's message has an `object` field.
func ArmHasObject(a Arm) bool {
	switch a {
	case ArmPrepareForCreate, ArmValidate, ArmWarningsOnCreate, ArmCanonicalize,
		ArmPrepareForUpdate, ArmValidateUpdate, ArmWarningsOnUpdate, ArmBeforeDelete,
		ArmAfterCreate, ArmAfterUpdate, ArmAfterDelete, ArmBeforeCreate, ArmBeforeUpdate:
		return true
	}
	return false
}

// ArmHasOldObject tells whether the arm's message has an `old_object` field.
func ArmHasOldObject(a Arm) bool {
	switch a {
	case ArmPrepareForUpdate, ArmValidateUpdate, ArmWarningsOnUpdate, ArmAfterUpdate,
		ArmBeforeUpdate:
		return true
	}
	return false
}

// ArmIsEmpty tells whether the arm's message has no fields (the allow_* questions).
func ArmIsEmpty(a Arm) bool {
	return a == ArmAllowCreateOnUpdate || a == ArmAllowUnconditionalUpdate
}

// Marshal encodes the request. An Arm this package does not know is left out.
func (r *Request) Marshal() []byte { return marshal(r) }

func (r *Request) encode(e *encoder) {
	if r.Context != nil {
		e.message(requestContext, r.Context)
	}
	switch {
	case r.Arm == ArmAdmit:
		admit := r.Admit
		if admit == nil {
			admit = &AdmitRequest{}
		}
		e.message(int(ArmAdmit), admit)
	case r.Arm == ArmConvert:
		convert := r.Convert
		if convert == nil {
			convert = &ConvertRequest{}
		}
		e.message(int(ArmConvert), convert)
	case r.Arm == ArmAuthorize:
		authorize := r.Authorize
		if authorize == nil {
			authorize = &AuthorizeRequest{}
		}
		e.message(int(ArmAuthorize), authorize)
	case ArmHasObject(r.Arm) || ArmIsEmpty(r.Arm):
		var sub encoder
		if ArmHasObject(r.Arm) {
			sub.bytes(opRequestObject, r.Object)
		}
		if ArmHasOldObject(r.Arm) {
			sub.bytes(opRequestOldObject, r.OldObject)
		}
		e.element(int(r.Arm), sub.buf)
	}
}

// Unmarshal decodes a request. Of several arms, the last one read wins, as protobuf's oneof
// semantics say.
func (r *Request) Unmarshal(b []byte) error {
	*r = Request{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		arm := Arm(f.num)
		switch {
		case f.num == requestContext:
			r.Context = &Context{}
			f.message(r.Context)
		case arm == ArmAdmit:
			r.clearArm(arm)
			r.Admit = &AdmitRequest{}
			f.message(r.Admit)
		case arm == ArmConvert:
			r.clearArm(arm)
			r.Convert = &ConvertRequest{}
			f.message(r.Convert)
		case arm == ArmAuthorize:
			r.clearArm(arm)
			r.Authorize = &AuthorizeRequest{}
			f.message(r.Authorize)
		case ArmHasObject(arm) || ArmIsEmpty(arm):
			r.clearArm(arm)
			if b := f.bytes(); f.err == nil {
				f.wrap(r.decodeOp(arm, b))
			}
		}
	}
	return fields.err
}

func (r *Request) clearArm(arm Arm) {
	r.Arm, r.Object, r.OldObject, r.Admit, r.Convert, r.Authorize = arm, nil, nil, nil, nil, nil
}

// decodeOp decodes a per-operation request message into the Request's Object and OldObject,
// reading only the fields that arm's message defines. (A method rather than a message type:
// one handed to field.message as an interface would be an allocation in every call.)
func (r *Request) decodeOp(arm Arm, b []byte) error {
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch {
		case f.num == opRequestObject && ArmHasObject(arm):
			r.Object = f.bytes()
		case f.num == opRequestOldObject && ArmHasOldObject(arm):
			r.OldObject = f.bytes()
		}
	}
	return fields.err
}

func (a *AdmitRequest) encode(e *encoder) {
	e.enum(admitRequestPhase, int32(a.Phase))
	e.string(admitRequestOperation, a.Operation)
	e.bytes(admitRequestObject, a.Object)
	e.bytes(admitRequestOldObject, a.OldObject)
	e.string(admitRequestNamespace, a.Namespace)
	e.string(admitRequestName, a.Name)
	e.string(admitRequestSubresource, a.Subresource)
}

// Unmarshal decodes an admission request.
func (a *AdmitRequest) Unmarshal(b []byte) error {
	*a = AdmitRequest{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch f.num {
		case admitRequestPhase:
			a.Phase = AdmissionPhase(f.enum())
		case admitRequestOperation:
			a.Operation = f.string()
		case admitRequestObject:
			a.Object = f.bytes()
		case admitRequestOldObject:
			a.OldObject = f.bytes()
		case admitRequestNamespace:
			a.Namespace = f.string()
		case admitRequestName:
			a.Name = f.string()
		case admitRequestSubresource:
			a.Subresource = f.string()
		}
	}
	return fields.err
}

func (c *ConvertRequest) encode(e *encoder) {
	for _, o := range c.Objects {
		e.element(convertRequestObjects, o)
	}
	e.string(convertRequestDesiredAPIVersion, c.DesiredAPIVersion)
}

// Unmarshal decodes a conversion request.
func (c *ConvertRequest) Unmarshal(b []byte) error {
	*c = ConvertRequest{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch f.num {
		case convertRequestObjects:
			c.Objects = append(c.Objects, f.bytes())
		case convertRequestDesiredAPIVersion:
			c.DesiredAPIVersion = f.string()
		}
	}
	return fields.err
}

func (a *AuthorizeRequest) encode(e *encoder) {
	e.bytes(authorizeRequestSpec, a.Spec)
}

// Unmarshal decodes an authorization request.
func (a *AuthorizeRequest) Unmarshal(b []byte) error {
	*a = AuthorizeRequest{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		if f.num == authorizeRequestSpec {
			a.Spec = f.bytes()
		}
	}
	return fields.err
}
