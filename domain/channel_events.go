package domain

// Channel event type names.
const (
	ChannelCreatedType = "ChannelCreated.v1"
	ChannelUpdatedType = "ChannelUpdated.v1"
	ChannelDeletedType = "ChannelDeleted.v1"
)

// ChannelCreated records a new channel. Categories is never nil and holds
// no repeats.
type ChannelCreated struct {
	ChannelID   int64   `json:"channel_id"`
	Name        string  `json:"name"`
	Number      int     `json:"number"`
	LogoURL     string  `json:"logo_url,omitempty"`
	Description string  `json:"description,omitempty"`
	Categories  []int64 `json:"categories"`
}

// ChannelUpdated carries the channel fields that changed; none is ever Null.
type ChannelUpdated struct {
	ChannelID   int64             `json:"channel_id"`
	Name        Optional[string]  `json:"name,omitzero"`
	Number      Optional[int]     `json:"number,omitzero"`
	LogoURL     Optional[string]  `json:"logo_url,omitzero"`
	Description Optional[string]  `json:"description,omitzero"`
	Categories  Optional[[]int64] `json:"categories,omitzero"`
}

// ChannelDeleted records that a channel was deleted. Its id is never reused.
type ChannelDeleted struct {
	ChannelID int64 `json:"channel_id"`
}

// EventType implements Event.
func (ChannelCreated) EventType() string { return ChannelCreatedType }

// EventType implements Event.
func (ChannelUpdated) EventType() string { return ChannelUpdatedType }

// EventType implements Event.
func (ChannelDeleted) EventType() string { return ChannelDeletedType }

func registerChannelEvents(r *Registry) {
	r.Register(ChannelCreatedType, func() Event { return new(ChannelCreated) })
	r.Register(ChannelUpdatedType, func() Event { return new(ChannelUpdated) })
	r.Register(ChannelDeletedType, func() Event { return new(ChannelDeleted) })
}
