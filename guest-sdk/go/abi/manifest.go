package abi

// Manifest describes a module: which ABI it speaks, which resources it serves, what it
// implements.
type Manifest struct {
	ABIVersion      uint32
	Name            string
	Resources       []Resource
	Operations      []Operation
	HostFunctions   []HostFunction
	Applies         []GroupKind
	ABIMinorVersion uint32
	// AdmissionPolicy is set when the module is an admission policy (since 1.2; Resources is
	// then empty).
	AdmissionPolicy *AdmissionPolicy
	// Authorizer is set when the module is an authorizer (since 1.5).
	Authorizer *Authorizer
}

// AdmissionPolicy is an admission policy's declaration: which writes it is asked about and what
// its verdicts do.
type AdmissionPolicy struct {
	// MatchResources is the JSON of Kubernetes' MatchResources.
	MatchResources    []byte
	MatchConditions   []MatchCondition
	ValidationActions []string
	FailurePolicy     string
}

// MatchCondition is a CEL expression that must hold for a policy to be asked, named for
// messages.
type MatchCondition struct {
	Name, Expression string
}

// Authorizer is an authorizer's declaration.
type Authorizer struct {
	// FailurePolicy is NoOpinion (the default, when empty) or Deny.
	FailurePolicy string
}

// Resource is a resource a module binds to.
type Resource struct {
	Group, Version, Kind, Plural string
	Scope                        Scope
}

// GroupKind names a resource by API group and kind, whatever its version ("" is the core group).
type GroupKind struct {
	Group, Kind string
}

// Marshal encodes the manifest.
func (m *Manifest) Marshal() []byte { return marshal(m) }

func (m *Manifest) encode(e *encoder) {
	e.uint(manifestABIVersion, uint64(m.ABIVersion))
	e.string(manifestName, m.Name)
	for i := range m.Resources {
		e.message(manifestResources, &m.Resources[i])
	}
	packed(e, manifestOperations, m.Operations)
	packed(e, manifestHostFunctions, m.HostFunctions)
	for i := range m.Applies {
		e.message(manifestApplies, &m.Applies[i])
	}
	e.uint(manifestABIMinorVersion, uint64(m.ABIMinorVersion))
	if m.AdmissionPolicy != nil {
		e.message(manifestAdmissionPolicy, m.AdmissionPolicy)
	}
	if m.Authorizer != nil {
		e.message(manifestAuthorizer, m.Authorizer)
	}
}

// Unmarshal decodes a manifest.
func (m *Manifest) Unmarshal(b []byte) error {
	*m = Manifest{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch f.num {
		case manifestABIVersion:
			m.ABIVersion = uint32(f.uint())
		case manifestName:
			m.Name = f.string()
		case manifestResources:
			var r Resource
			f.message(&r)
			m.Resources = append(m.Resources, r)
		case manifestOperations:
			m.Operations = appendEnums(m.Operations, f)
		case manifestHostFunctions:
			m.HostFunctions = appendEnums(m.HostFunctions, f)
		case manifestApplies:
			var gk GroupKind
			f.message(&gk)
			m.Applies = append(m.Applies, gk)
		case manifestABIMinorVersion:
			m.ABIMinorVersion = uint32(f.uint())
		case manifestAdmissionPolicy:
			m.AdmissionPolicy = &AdmissionPolicy{}
			f.message(m.AdmissionPolicy)
		case manifestAuthorizer:
			m.Authorizer = &Authorizer{}
			f.message(m.Authorizer)
		}
	}
	return fields.err
}

func (p *AdmissionPolicy) encode(e *encoder) {
	e.bytes(admissionPolicyMatchResources, p.MatchResources)
	for i := range p.MatchConditions {
		e.message(admissionPolicyMatchConditions, &p.MatchConditions[i])
	}
	for _, a := range p.ValidationActions {
		e.stringElement(admissionPolicyValidationActions, a)
	}
	e.string(admissionPolicyFailurePolicy, p.FailurePolicy)
}

// Unmarshal decodes an admission policy's declaration.
func (p *AdmissionPolicy) Unmarshal(b []byte) error {
	*p = AdmissionPolicy{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch f.num {
		case admissionPolicyMatchResources:
			p.MatchResources = f.bytes()
		case admissionPolicyMatchConditions:
			var c MatchCondition
			f.message(&c)
			p.MatchConditions = append(p.MatchConditions, c)
		case admissionPolicyValidationActions:
			p.ValidationActions = append(p.ValidationActions, f.string())
		case admissionPolicyFailurePolicy:
			p.FailurePolicy = f.string()
		}
	}
	return fields.err
}

func (c *MatchCondition) encode(e *encoder) {
	e.string(matchConditionName, c.Name)
	e.string(matchConditionExpression, c.Expression)
}

// Unmarshal decodes a match condition.
func (c *MatchCondition) Unmarshal(b []byte) error {
	*c = MatchCondition{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch f.num {
		case matchConditionName:
			c.Name = f.string()
		case matchConditionExpression:
			c.Expression = f.string()
		}
	}
	return fields.err
}

func (a *Authorizer) encode(e *encoder) {
	e.string(authorizerFailurePolicy, a.FailurePolicy)
}

// Unmarshal decodes an authorizer's declaration.
func (a *Authorizer) Unmarshal(b []byte) error {
	*a = Authorizer{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		if f.num == authorizerFailurePolicy {
			a.FailurePolicy = f.string()
		}
	}
	return fields.err
}

func (r *Resource) encode(e *encoder) {
	e.string(resourceGroup, r.Group)
	e.string(resourceVersion, r.Version)
	e.string(resourceKind, r.Kind)
	e.string(resourcePlural, r.Plural)
	e.enum(resourceScope, int32(r.Scope))
}

// Unmarshal decodes a resource.
func (r *Resource) Unmarshal(b []byte) error {
	*r = Resource{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch f.num {
		case resourceGroup:
			r.Group = f.string()
		case resourceVersion:
			r.Version = f.string()
		case resourceKind:
			r.Kind = f.string()
		case resourcePlural:
			r.Plural = f.string()
		case resourceScope:
			r.Scope = Scope(f.enum())
		}
	}
	return fields.err
}

func (g *GroupKind) encode(e *encoder) {
	e.string(groupKindGroup, g.Group)
	e.string(groupKindKind, g.Kind)
}

// Unmarshal decodes a group and kind.
func (g *GroupKind) Unmarshal(b []byte) error {
	*g = GroupKind{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch f.num {
		case groupKindGroup:
			g.Group = f.string()
		case groupKindKind:
			g.Kind = f.string()
		}
	}
	return fields.err
}

// marshal encodes a top-level message.
func marshal(m interface{ encode(*encoder) }) []byte { return marshalInto(nil, m) }

// marshalInto encodes a top-level message, appending to buf.
func marshalInto(buf []byte, m interface{ encode(*encoder) }) []byte {
	e := encoder{buf: buf}
	m.encode(&e)
	return e.buf
}
