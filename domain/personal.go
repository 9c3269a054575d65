package domain

// PersonalData names the personal values an event type carries: the
// top-level members of its JSON form whose values identify or describe a
// subscriber, and the member that holds the subscriber's account id (the
// data subject, whose key encrypts them). Everything else an event carries
// (ids, tariffs, dates, flags, device classes) is not personal and stays
// readable without keys, so statistics and projections work on an erased
// subscriber's past.
type PersonalData struct {
	// Subject is the JSON key of the member holding the subject's account
	// id, a number.
	Subject string
	// Fields are the JSON keys of the personal members. Every one holds a
	// string or null, so "erased" can stand in for any of them.
	Fields []string
	// SubjectOptional: an event without a subject (0 or absent) carries
	// nothing personal, and stays as it is.
	SubjectOptional bool
	// ErasedAs is the JSON that stands for an erased value when "erased"
	// cannot (a string that must decode as base64); empty means
	// ErasedValue.
	ErasedAs string
}

// ErasedValue replaces every personal value whose subject was erased: what
// history and as_of answers show in its place.
const ErasedValue = "erased"

// personalData is the one list of personal data in events. An event type
// that gains a personal field must add it here; a test checks that every
// field listed exists on the event and holds a string. Admins (the
// operator's staff) are not data subjects here.
var personalData = map[string]PersonalData{
	AccountCreatedType: {Subject: "account_id", Fields: []string{
		"login", "pin_md5", "fullname", "remote_custom_field", "contract_info", "main_address", "account_desc"}},
	AccountUpdatedType: {Subject: "account_id", Fields: []string{
		"login", "pin_md5", "fullname", "remote_custom_field", "contract_info", "main_address", "account_desc"}},
	DeviceBoundType: {Subject: "account_id", Fields: []string{
		"unique_id", "mac", "remote_custom_field", "comment", "udpxy_addr"}},
	DeviceChangedType: {Subject: "account_id", Fields: []string{
		"mac", "remote_custom_field", "comment", "udpxy_addr"}},
	DeviceUnboundType:       {Subject: "account_id", Fields: []string{"unique_id"}},
	DeviceConnectedType:     {Subject: "account", Fields: []string{"address"}},
	DeviceLoggedInType:      {Subject: "account", Fields: []string{"address"}},
	AccountNetworkAddedType: {Subject: "account", Fields: []string{"network", "description"}},
	// A change names its network's account after the change in owner.
	AccountNetworkChangedType: {Subject: "owner", Fields: []string{"network", "description"}},
	// The answer an idempotent request recorded for its retries (an
	// account or device object) belongs to the account the request wrote
	// to; requests that wrote to none record no subject.
	idempotencyRecordedType: {Subject: "subject", Fields: []string{"body"}, SubjectOptional: true, ErasedAs: "null"},
}

// idempotencyRecordedType is the application's record of an idempotent
// request's answer (its package defines the event; the domain only lists
// what in it is personal).
const idempotencyRecordedType = "IdempotencyRecorded.v1"

// PersonalDataOf returns the personal data of events of eventType; ok is
// false for a type that carries none.
func PersonalDataOf(eventType string) (p PersonalData, ok bool) {
	p, ok = personalData[eventType]
	return p, ok
}

// PersonalEventTypes returns the event types that carry personal data.
func PersonalEventTypes() []string {
	out := make([]string, 0, len(personalData))
	for t := range personalData {
		out = append(out, t)
	}
	return out
}
