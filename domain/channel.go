package domain

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Channel is a TV channel of the operator's line-up; tariffs list channels
// by id. Its id is allocated outside the domain. The zero Channel does not
// exist yet.
type Channel struct {
	ID          int64
	Name        string
	Number      int    // position in the line-up, >= 0
	LogoURL     string // "" for none
	Description string
	Categories  []int64 // category ids, no repeats, in the order given
	// TextName is the name shown to viewers when it differs from Name;
	// "" for none (Name is shown).
	TextName string
	// Disabled channels are not offered to devices. The zero value is an
	// enabled channel, as every channel created before channels could be
	// disabled is.
	Disabled bool
	// TimeShiftDepth is how far back the channel can be replayed, as TVIP's
	// time_shift_depth (tvsm stores it as given); nil for no time shift.
	TimeShiftDepth *int
	Deleted        bool
}

// Exists reports whether the channel was created and not deleted.
func (c Channel) Exists() bool { return c.ID != 0 && !c.Deleted }

// Limits of channel fields.
const (
	MaxChannelNameLen        = 100
	MaxChannelDescriptionLen = 1000
	MaxChannelNumber         = 1_000_000
	MaxChannelCategories     = 100
	MaxTimeShiftDepth        = math.MaxInt32
)

var (
	channelNameRule        = textRule{max: MaxChannelNameLen, required: true, trimmed: true}
	channelDescriptionRule = textRule{max: MaxChannelDescriptionLen, multiline: true}
	channelTextNameRule    = textRule{max: MaxChannelNameLen, trimmed: true}
	errChannelTarget       = errors.New("channel command decided on another channel's state")
)

// ChannelCommand is a command on a channel: CreateChannel, UpdateChannel or
// DeleteChannel.
type ChannelCommand interface {
	Stream() string
	channelCommand()
}

// CreateChannel creates channel ID. Repeated category ids are dropped; that
// the categories exist is checked outside the domain. Enabled defaults to
// true.
type CreateChannel struct {
	ID             int64
	Name           string
	Number         int
	LogoURL        string
	Description    string
	Categories     []int64
	TextName       string
	Enabled        *bool
	TimeShiftDepth *int
}

// UpdateChannel changes the fields present in it. A null LogoURL,
// Description, Categories, TextName or TimeShiftDepth clears it.
type UpdateChannel struct {
	ID             int64
	Name           Optional[string]
	Number         Optional[int]
	LogoURL        Optional[string]
	Description    Optional[string]
	Categories     Optional[[]int64]
	TextName       Optional[string]
	Enabled        Optional[bool]
	TimeShiftDepth Optional[int]
}

// DeleteChannel deletes channel ID.
type DeleteChannel struct{ ID int64 }

// Stream implements ChannelCommand.
func (c CreateChannel) Stream() string { return ChannelStream(c.ID) }

// Stream implements ChannelCommand.
func (c UpdateChannel) Stream() string { return ChannelStream(c.ID) }

// Stream implements ChannelCommand.
func (c DeleteChannel) Stream() string { return ChannelStream(c.ID) }

func (CreateChannel) channelCommand() {}
func (UpdateChannel) channelCommand() {}
func (DeleteChannel) channelCommand() {}

// ChannelDecider returns the decider of the channel aggregate.
func ChannelDecider() Decider[Channel, ChannelCommand] {
	return Decider[Channel, ChannelCommand]{
		Initial: func() Channel { return Channel{} },
		Evolve:  evolveChannel,
		Decide:  decideChannel,
	}
}

func evolveChannel(s Channel, e Event) Channel {
	switch e := e.(type) {
	case ChannelCreated:
		return Channel{
			ID:             e.ChannelID,
			Name:           e.Name,
			Number:         e.Number,
			LogoURL:        e.LogoURL,
			Description:    e.Description,
			Categories:     e.Categories,
			TextName:       e.TextName,
			Disabled:       e.Disabled,
			TimeShiftDepth: e.TimeShiftDepth,
		}
	case ChannelUpdated:
		applyValue(&s.Name, e.Name)
		applyValue(&s.Number, e.Number)
		applyValue(&s.LogoURL, e.LogoURL)
		applyValue(&s.Description, e.Description)
		applyValue(&s.Categories, e.Categories)
		applyValue(&s.TextName, e.TextName)
		if v, ok := e.Enabled.Get(); ok {
			s.Disabled = !v
		}
		applyNullable(&s.TimeShiftDepth, e.TimeShiftDepth)
	case ChannelDeleted:
		s.Deleted = true
	}
	return s
}

func decideChannel(s Channel, c ChannelCommand, _ time.Time) ([]Event, error) {
	switch c := c.(type) {
	case CreateChannel:
		return createChannel(s, c)
	case UpdateChannel:
		if err := checkChannelTarget(s, c.ID); err != nil {
			return nil, err
		}
		return updateChannel(s, c)
	case DeleteChannel:
		if err := checkChannelTarget(s, c.ID); err != nil {
			return nil, err
		}
		return []Event{ChannelDeleted{ChannelID: s.ID}}, nil
	}
	return nil, errors.New("domain: unknown channel command")
}

// checkChannelTarget returns ErrNotFound unless channel id exists in s.
func checkChannelTarget(s Channel, id int64) error {
	switch {
	case !s.Exists():
		return notFound("channel", id)
	case s.ID != id:
		return errChannelTarget
	}
	return nil
}

// checkChannelNumber validates a channel number.
func checkChannelNumber(n int) string {
	if n < 0 || n > MaxChannelNumber {
		return fmt.Sprintf("must be between 0 and %d", MaxChannelNumber)
	}
	return ""
}

// checkTimeShiftDepth validates a time shift depth.
func checkTimeShiftDepth(n int) string {
	if n < 0 || n > MaxTimeShiftDepth {
		return fmt.Sprintf("must be between 0 and %d", MaxTimeShiftDepth)
	}
	return ""
}

// checkLogoURL validates a logo URL; "" means no logo.
func checkLogoURL(s string) string {
	if s == "" {
		return ""
	}
	if err := ValidateHTTPURL(s); err != nil {
		return err.Error()
	}
	return ""
}

func createChannel(s Channel, c CreateChannel) ([]Event, error) {
	var p problems
	p.add("id", checkID(c.ID))
	p.add("name", channelNameRule.check(c.Name))
	p.add("number", checkChannelNumber(c.Number))
	p.add("logo_url", checkLogoURL(c.LogoURL))
	p.add("description", channelDescriptionRule.check(c.Description))
	categories, problem := cloneIDs(c.Categories, MaxChannelCategories)
	p.add("categories", problem)
	p.add("text_name", channelTextNameRule.check(c.TextName))
	if c.TimeShiftDepth != nil {
		p.add("time_shift_depth", checkTimeShiftDepth(*c.TimeShiftDepth))
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	if s.ID != 0 {
		return nil, alreadyExists("channel", c.ID)
	}
	return []Event{ChannelCreated{
		ChannelID:      c.ID,
		Name:           c.Name,
		Number:         c.Number,
		LogoURL:        c.LogoURL,
		Description:    c.Description,
		Categories:     categories,
		TextName:       c.TextName,
		Disabled:       c.Enabled != nil && !*c.Enabled,
		TimeShiftDepth: c.TimeShiftDepth,
	}}, nil
}

func updateChannel(s Channel, c UpdateChannel) ([]Event, error) {
	var p problems
	e := ChannelUpdated{ChannelID: s.ID}
	e.Name = patchValue(&p, "name", c.Name, s.Name, channelNameRule.check)
	e.Number = patchValue(&p, "number", c.Number, s.Number, checkChannelNumber)
	e.LogoURL = patchValue(&p, "logo_url", clearable(c.LogoURL), s.LogoURL, checkLogoURL)
	e.Description = patchValue(&p, "description", clearable(c.Description), s.Description, channelDescriptionRule.check)
	e.TextName = patchValue(&p, "text_name", clearable(c.TextName), s.TextName, channelTextNameRule.check)
	e.Enabled = patchValue(&p, "enabled", c.Enabled, !s.Disabled, nil)
	e.TimeShiftDepth = patchNullable(&p, "time_shift_depth", c.TimeShiftDepth, s.TimeShiftDepth, checkTimeShiftDepth)
	if c.Categories.Present {
		given, _ := c.Categories.Get() // null clears
		categories, problem := cloneIDs(given, MaxChannelCategories)
		p.add("categories", problem)
		if problem == "" && !slices.Equal(categories, s.Categories) {
			e.Categories = Some(categories)
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	if !e.Name.Present && !e.Number.Present && !e.LogoURL.Present && !e.Description.Present &&
		!e.Categories.Present && !e.TextName.Present && !e.Enabled.Present && !e.TimeShiftDepth.Present {
		return nil, nil
	}
	return []Event{e}, nil
}

// clearable turns a null into the zero value, for fields where null means
// empty (descriptions, URLs).
func clearable[T any](o Optional[T]) Optional[T] {
	if o.IsNull() {
		var zero T
		return Some(zero)
	}
	return o
}
