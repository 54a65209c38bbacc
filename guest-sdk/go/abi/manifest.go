package abi

// Manifest describes a module: which ABI it speaks, which resources it serves, what it
// implements. (The admission_policy field, which only admission policies send, is not
// modelled; decoding skips it.)
type Manifest struct {
	ABIVersion      uint32
	Name            string
	Resources       []Resource
	Operations      []Operation
	HostFunctions   []HostFunction
	Applies         []GroupKind
	ABIMinorVersion uint32
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
}

// Unmarshal decodes a manifest.
func (m *Manifest) Unmarshal(b []byte) error {
	*m = Manifest{}
	return eachField(b, func(f *field) {
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
		}
	})
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
	return eachField(b, func(f *field) {
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
	})
}

func (g *GroupKind) encode(e *encoder) {
	e.string(groupKindGroup, g.Group)
	e.string(groupKindKind, g.Kind)
}

// Unmarshal decodes a group and kind.
func (g *GroupKind) Unmarshal(b []byte) error {
	*g = GroupKind{}
	return eachField(b, func(f *field) {
		switch f.num {
		case groupKindGroup:
			g.Group = f.string()
		case groupKindKind:
			g.Kind = f.string()
		}
	})
}

// marshal encodes a top-level message.
func marshal(m interface{ encode(*encoder) }) []byte {
	var e encoder
	m.encode(&e)
	return e.buf
}
