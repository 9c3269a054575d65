package domain

// Channel event type names.
const (
	ChannelCreatedType = "ChannelCreated.v1"
	ChannelUpdatedType = "ChannelUpdated.v1"
	ChannelDeletedType = "ChannelDeleted.v1"
)

// ChannelCreated records a new channel. Categories is never nil and holds
// no repeats. A channel is created enabled unless Disabled: channels
// created before they could be disabled have no such field.
type ChannelCreated struct {
	ChannelID      int64   `json:"channel_id"`
	Name           string  `json:"name"`
	Number         int     `json:"number"`
	LogoURL        string  `json:"logo_url,omitempty"`
	Description    string  `json:"description,omitempty"`
	Categories     []int64 `json:"categories"`
	TextName       string  `json:"text_name,omitempty"`
	Disabled       bool    `json:"disabled,omitempty"`
	TimeShiftDepth *int    `json:"time_shift_depth,omitempty"`
}

// ChannelUpdated carries the channel fields that changed. Only
// TimeShiftDepth may be Null (no time shift); a cleared text is "".
type ChannelUpdated struct {
	ChannelID      int64             `json:"channel_id"`
	Name           Optional[string]  `json:"name,omitzero"`
	Number         Optional[int]     `json:"number,omitzero"`
	LogoURL        Optional[string]  `json:"logo_url,omitzero"`
	Description    Optional[string]  `json:"description,omitzero"`
	Categories     Optional[[]int64] `json:"categories,omitzero"`
	TextName       Optional[string]  `json:"text_name,omitzero"`
	Enabled        Optional[bool]    `json:"enabled,omitzero"`
	TimeShiftDepth Optional[int]     `json:"time_shift_depth,omitzero"`
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
