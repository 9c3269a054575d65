package domain

// Helpers that turn the Optional fields of an update command into the
// Optional fields of its Updated event: only fields that change survive,
// so an update that re-sends the current values emits nothing.

// patchValue handles a field that cannot be null. Absent, invalid and
// unchanged values give absent; null is a problem. check may be nil.
func patchValue[T comparable](p *problems, field string, o Optional[T], cur T, check func(T) string) Optional[T] {
	if !o.Present {
		return Optional[T]{}
	}
	v, ok := o.Get()
	if !ok {
		p.add(field, problemNotNull)
		return Optional[T]{}
	}
	if check != nil {
		if problem := check(v); problem != "" {
			p.add(field, problem)
			return Optional[T]{}
		}
	}
	if v == cur {
		return Optional[T]{}
	}
	return Some(v)
}

// patchNullable handles a nullable field whose current value is cur (nil
// for null). Absent, invalid and unchanged values give absent. check, which
// may be nil, sees only values, never null.
func patchNullable[T comparable](p *problems, field string, o Optional[T], cur *T, check func(T) string) Optional[T] {
	if v, ok := o.Get(); ok && check != nil {
		if problem := check(v); problem != "" {
			p.add(field, problem)
			return Optional[T]{}
		}
	}
	if !changes(o, cur) {
		return Optional[T]{}
	}
	return o.canonical()
}

// equalPtr reports whether two nullable values are both null or equal.
func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// changes reports whether applying o to the current value cur (nil for
// null) changes it.
func changes[T comparable](o Optional[T], cur *T) bool {
	v, ok := o.Get()
	switch {
	case ok:
		return cur == nil || *cur != v
	case o.IsNull():
		return cur != nil
	}
	return false
}

// applyValue sets *dst to o's value when o holds one.
func applyValue[T any](dst *T, o Optional[T]) {
	if v, ok := o.Get(); ok {
		*dst = v
	}
}

// applyNullable sets *dst to o (nil for null) when o is present.
func applyNullable[T any](dst **T, o Optional[T]) {
	if o.Present {
		*dst = o.Ptr()
	}
}

// orNil returns *p, or an untyped nil for a nil pointer: the values of a
// FieldChange.
func orNil[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// optionalAny returns o's value, or an untyped nil for null: the New of a
// FieldChange.
func optionalAny[T any](o Optional[T]) any {
	if v, ok := o.Get(); ok {
		return v
	}
	return nil
}
