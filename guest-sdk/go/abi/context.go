package abi

import "sort"

// Context is what every call is told about its request.
type Context struct {
	Resource  *Resource
	DryRun    bool
	RequestID string
	// User is who makes the request (since ABI 1.1); nil when the host did not say.
	User *UserInfo
}

// UserInfo is a user as authentication established it. Extra flattens the proto's
// map<string, ExtraValue> to the values of each key.
type UserInfo struct {
	Username string
	UID      string
	Groups   []string
	Extra    map[string][]string
}

func (c *Context) encode(e *encoder) {
	if c.Resource != nil {
		e.message(contextResource, c.Resource)
	}
	e.bool(contextDryRun, c.DryRun)
	e.string(contextRequestID, c.RequestID)
	if c.User != nil {
		e.message(contextUser, c.User)
	}
}

// Unmarshal decodes a context.
func (c *Context) Unmarshal(b []byte) error {
	*c = Context{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch f.num {
		case contextResource:
			c.Resource = &Resource{}
			f.message(c.Resource)
		case contextDryRun:
			c.DryRun = f.bool()
		case contextRequestID:
			c.RequestID = f.string()
		case contextUser:
			c.User = &UserInfo{}
			f.message(c.User)
		}
	}
	return fields.err
}

func (u *UserInfo) encode(e *encoder) {
	e.string(userInfoUsername, u.Username)
	e.string(userInfoUID, u.UID)
	for _, g := range u.Groups {
		e.stringElement(userInfoGroups, g)
	}
	keys := make([]string, 0, len(u.Extra))
	for k := range u.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var entry, value encoder
		for _, v := range u.Extra[k] {
			value.stringElement(extraValueValues, v)
		}
		entry.string(mapEntryKey, k)
		entry.element(mapEntryValue, value.buf)
		e.element(userInfoExtra, entry.buf)
	}
}

// Unmarshal decodes a user.
func (u *UserInfo) Unmarshal(b []byte) error {
	*u = UserInfo{}
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch f.num {
		case userInfoUsername:
			u.Username = f.string()
		case userInfoUID:
			u.UID = f.string()
		case userInfoGroups:
			u.Groups = append(u.Groups, f.string())
		case userInfoExtra:
			var entry extraEntry
			f.message(&entry)
			if u.Extra == nil {
				u.Extra = map[string][]string{}
			}
			u.Extra[entry.key] = entry.values
		}
	}
	return fields.err
}

// extraEntry is one entry of UserInfo.extra: a key and its ExtraValue's values.
type extraEntry struct {
	key    string
	values []string
}

func (x *extraEntry) Unmarshal(b []byte) error {
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		switch f.num {
		case mapEntryKey:
			x.key = f.string()
		case mapEntryValue:
			x.values = nil
			f.message(&extraValue{values: &x.values})
		}
	}
	return fields.err
}

// extraValue decodes an ExtraValue into the slice it points to.
type extraValue struct {
	values *[]string
}

func (x *extraValue) Unmarshal(b []byte) error {
	fields := fieldReader{data: b}
	for fields.next() {
		f := &fields.f
		if f.num == extraValueValues {
			*x.values = append(*x.values, f.string())
		}
	}
	return fields.err
}
