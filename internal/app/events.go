package app

import "tvsm/domain"

// eventTypes are the events this package stores.
var eventTypes = []string{
	IDBlockReservedType,
	ReservationTakenType,
	ReservationReleasedType,
	IdempotencyStartedType,
	IdempotencyIDPinnedType,
	IdempotencyRecordedType,
	IdempotencyFailedType,
}

// RegisterEvents registers the events of the application layer (id blocks,
// uniqueness reservations, idempotency records) with r. The composition root
// calls it next to the domain's registrations, before New.
func RegisterEvents(r *domain.Registry) {
	r.Register(IDBlockReservedType, func() domain.Event { return IDBlockReserved{} })
	r.Register(ReservationTakenType, func() domain.Event { return ReservationTaken{} })
	r.Register(ReservationReleasedType, func() domain.Event { return ReservationReleased{} })
	r.Register(IdempotencyStartedType, func() domain.Event { return IdempotencyStarted{} })
	r.Register(IdempotencyIDPinnedType, func() domain.Event { return IdempotencyIDPinned{} })
	r.Register(IdempotencyRecordedType, func() domain.Event { return IdempotencyRecorded{} })
	r.Register(IdempotencyFailedType, func() domain.Event { return IdempotencyFailed{} })
	r.Register(IdempotencyLeaseExtendedType, func() domain.Event { return IdempotencyLeaseExtended{} })
}
