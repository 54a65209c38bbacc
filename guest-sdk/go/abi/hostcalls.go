package abi

// GetRequest asks host function `get` for one object.
type GetRequest struct {
	Group, Plural, Namespace, Name string
}

// GetResponse is the answer of `get`.
type GetResponse struct {
	Found  bool
	Object []byte
	Error  string
}

// ListRequest asks host function `list` for objects of a resource.
type ListRequest struct {
	Group, Plural, Namespace, LabelSelector string
}

// ListResponse is the answer of `list`.
type ListResponse struct {
	Items [][]byte
	Error string
}

// ApplyRequest asks host function `apply` to create or update an object.
type ApplyRequest struct {
	Object []byte
}

// ApplyResponse is the answer of `apply`: the object as stored.
type ApplyResponse struct {
	Object []byte
	Error  string
}

// Marshal encodes the request.
func (r *GetRequest) Marshal() []byte { return marshal(r) }

func (r *GetRequest) encode(e *encoder) {
	e.string(getRequestGroup, r.Group)
	e.string(getRequestPlural, r.Plural)
	e.string(getRequestNamespace, r.Namespace)
	e.string(getRequestName, r.Name)
}

// Unmarshal decodes the request.
func (r *GetRequest) Unmarshal(b []byte) error {
	*r = GetRequest{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch f.num {
		case getRequestGroup:
			r.Group = f.string()
		case getRequestPlural:
			r.Plural = f.string()
		case getRequestNamespace:
			r.Namespace = f.string()
		case getRequestName:
			r.Name = f.string()
		}
	}
	return fields.err
}

// Marshal encodes the response.
func (r *GetResponse) Marshal() []byte { return marshal(r) }

func (r *GetResponse) encode(e *encoder) {
	e.bool(getResponseFound, r.Found)
	e.bytes(getResponseObject, r.Object)
	e.string(getResponseError, r.Error)
}

// Unmarshal decodes the response.
func (r *GetResponse) Unmarshal(b []byte) error {
	*r = GetResponse{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch f.num {
		case getResponseFound:
			r.Found = f.bool()
		case getResponseObject:
			r.Object = f.bytes()
		case getResponseError:
			r.Error = f.string()
		}
	}
	return fields.err
}

// Marshal encodes the request.
func (r *ListRequest) Marshal() []byte { return marshal(r) }

func (r *ListRequest) encode(e *encoder) {
	e.string(listRequestGroup, r.Group)
	e.string(listRequestPlural, r.Plural)
	e.string(listRequestNamespace, r.Namespace)
	e.string(listRequestLabelSelector, r.LabelSelector)
}

// Unmarshal decodes the request.
func (r *ListRequest) Unmarshal(b []byte) error {
	*r = ListRequest{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch f.num {
		case listRequestGroup:
			r.Group = f.string()
		case listRequestPlural:
			r.Plural = f.string()
		case listRequestNamespace:
			r.Namespace = f.string()
		case listRequestLabelSelector:
			r.LabelSelector = f.string()
		}
	}
	return fields.err
}

// Marshal encodes the response.
func (r *ListResponse) Marshal() []byte { return marshal(r) }

func (r *ListResponse) encode(e *encoder) {
	for _, item := range r.Items {
		e.element(listResponseItems, item)
	}
	e.string(listResponseError, r.Error)
}

// Unmarshal decodes the response.
func (r *ListResponse) Unmarshal(b []byte) error {
	*r = ListResponse{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch f.num {
		case listResponseItems:
			r.Items = append(r.Items, f.bytes())
		case listResponseError:
			r.Error = f.string()
		}
	}
	return fields.err
}

// Marshal encodes the request.
func (r *ApplyRequest) Marshal() []byte { return marshal(r) }

func (r *ApplyRequest) encode(e *encoder) {
	e.bytes(applyRequestObject, r.Object)
}

// Unmarshal decodes the request.
func (r *ApplyRequest) Unmarshal(b []byte) error {
	*r = ApplyRequest{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		if f.num == applyRequestObject {
			r.Object = f.bytes()
		}
	}
	return fields.err
}

// Marshal encodes the response.
func (r *ApplyResponse) Marshal() []byte { return marshal(r) }

func (r *ApplyResponse) encode(e *encoder) {
	e.bytes(applyResponseObject, r.Object)
	e.string(applyResponseError, r.Error)
}

// Unmarshal decodes the response.
func (r *ApplyResponse) Unmarshal(b []byte) error {
	*r = ApplyResponse{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch f.num {
		case applyResponseObject:
			r.Object = f.bytes()
		case applyResponseError:
			r.Error = f.string()
		}
	}
	return fields.err
}
