package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Flags holds what the command line set, so it can be applied after the YAML
// file and the environment (flags win) once the whole line is parsed.
type Flags struct {
	configPath string
	set        []flagValue // in command-line order; a repeated flag's last value wins
}

type flagValue struct {
	setting setting
	value   string
}

// RegisterFlags defines --config and one flag per setting on fs. Subcommands
// add their own flags to the same FlagSet.
func RegisterFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.configPath, configFlag, "", "YAML configuration `file` (also "+configEnv+")")
	defaults := Defaults()
	for _, s := range settings {
		if s.noFlag {
			continue
		}
		fs.Var(&recordingValue{flags: f, setting: s, def: s.get(&defaults)}, s.flagName(), s.usage)
	}
	return f
}

// recordingValue checks a flag's value when it is parsed (so flag.Parse
// reports a bad one against its flag) and records it for Load.
type recordingValue struct {
	flags   *Flags
	setting setting
	def     string
}

func (v *recordingValue) String() string {
	if v == nil {
		return ""
	}
	return v.def
}

func (v *recordingValue) Set(s string) error {
	scratch := Defaults()
	if err := v.setting.set(&scratch, s); err != nil {
		return err
	}
	v.flags.set = append(v.flags.set, flagValue{setting: v.setting, value: s})
	return nil
}

// Load builds the configuration: defaults, then the YAML file named by
// --config or TVSM_CONFIG, then TVSM_* variables from lookupEnv (empty ones
// count as unset), then the flags. It returns the first bad value, naming its
// source.
func (f *Flags) Load(lookupEnv func(string) (string, bool)) (Config, error) {
	cfg := Defaults()

	path := f.configPath
	if path == "" {
		path, _ = lookupEnv(configEnv)
	}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("config file: %w", err)
		}
		if err := applyYAML(&cfg, data); err != nil {
			return Config{}, fmt.Errorf("config file %s: %w", path, err)
		}
	}

	for _, s := range settings {
		v, ok := lookupEnv(s.envName())
		if !ok || v == "" {
			continue
		}
		if err := s.set(&cfg, v); err != nil {
			return Config{}, fmt.Errorf("env %s: %w", s.envName(), err)
		}
	}

	for _, fv := range f.set {
		if err := fv.setting.set(&cfg, fv.value); err != nil {
			return Config{}, fmt.Errorf("flag --%s: %w", fv.setting.flagName(), err)
		}
	}

	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

// CommandLineError is a bad flag or argument. It has already been written,
// with the usage, to the output given to Load.
type CommandLineError struct{ Err error }

func (e *CommandLineError) Error() string { return e.Err.Error() }
func (e *CommandLineError) Unwrap() error { return e.Err }

// Load parses args (the arguments after the subcommand name) with a FlagSet
// of its own and loads the configuration. Usage and command-line errors are
// written to output; -h yields flag.ErrHelp, a bad flag or a positional
// argument a *CommandLineError.
func Load(name string, args []string, lookupEnv func(string) (string, bool), output io.Writer) (Config, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(output)
	flags := RegisterFlags(fs)
	fs.Usage = func() { PrintUsage(fs, "tvsm "+name+" [flags]") }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Config{}, err
		}
		return Config{}, &CommandLineError{Err: err}
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("%s: unexpected argument %q", name, fs.Arg(0))
		fmt.Fprintln(output, err)
		fs.Usage()
		return Config{}, &CommandLineError{Err: err}
	}
	return flags.Load(lookupEnv)
}

// PrintUsage writes a usage line, the flags of fs and the settings that have
// only an environment variable or YAML key.
func PrintUsage(fs *flag.FlagSet, synopsis string) {
	w := fs.Output()
	fmt.Fprintf(w, "Usage: %s\n\nFlags (each also TVSM_<NAME> in the environment, <name> in the YAML file;\nflags beat the environment, which beats the file):\n", synopsis)
	fs.PrintDefaults()
	fmt.Fprintln(w, "\nEnvironment or YAML file only:")
	for _, s := range settings {
		if s.noFlag {
			fmt.Fprintf(w, "  %s (%s)\n    \t%s\n", s.envName(), s.key, strings.ReplaceAll(s.usage, "`", ""))
		}
	}
}
