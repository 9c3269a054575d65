package wire

import "tvsm/domain"

// Optional is a field of a partial update, in its three states:
//
//	absent          Present == false             leave the field unchanged
//	null            Present && Null              clear it (nullable fields)
//	a value         Present && !Null, in Value   set it
//
// It is the domain's type, so decoded fields go straight into commands.
// For non-nullable fields null means the same as absent: clients resend
// whole records, including fields the API returns as null (pin_md5).
// The non-nullable getters therefore return absent for null. After a type
// error a getter also returns absent (so a handler that forgot to check
// Object.Err changes nothing); check Err before using any field.
type Optional[T any] = domain.Optional[T]

// Some returns an Optional holding v.
func Some[T any](v T) Optional[T] { return domain.Some(v) }

// Null returns an Optional that is present and null.
func Null[T any]() Optional[T] { return domain.Null[T]() }
