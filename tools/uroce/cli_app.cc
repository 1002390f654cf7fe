#include "tools/uroce/cli_app.h"

#include <algorithm>
#include <sstream>

#include "tools/uroce/cli.h"
#include "uroce_build_info.h"
#include "uroce_git_describe.h"

namespace uroce::tools {
namespace {

// uroce's help layout: the synopsis first (as the global `uroce --help` writes it), then the description,
// the positionals and options CLI11 lists, and the footer.
class UroceFormatter : public CLI::Formatter {
 public:
  explicit UroceFormatter(std::string usage) : usage_(std::move(usage)) { column_width(28); }

  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
    if (mode == CLI::AppFormatMode::Sub) return CLI::Formatter::make_help(app, name, mode);
    std::ostringstream out;
    out << "usage: " << app->get_name() << (usage_.empty() ? "" : " ") << usage_ << "\n";
    if (!app->get_description().empty()) out << "\n" << app->get_description() << "\n";
    out << make_positionals(app) << make_groups(app, mode);
    if (!app->get_footer().empty()) out << "\n" << app->get_footer() << "\n";
    return out.str();
  }

 private:
  std::string usage_;
};

}  // namespace

void setup_app(CLI::App& app, const std::string& usage, const std::string& footer) {
  app.formatter(std::make_shared<UroceFormatter>(usage));
  app.get_formatter()->label("OPTIONS", "options");
  app.set_help_flag("-h,--help", "print this help and exit");
  // An option given twice takes the last value, as getopt-style parsers do (a wrapper's default, then the
  // user's); options that collect (--cc-param, exp's words) keep every value.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  if (!footer.empty()) app.footer(footer);
}

std::string describe_parse_error(const CLI::ParseError& e) {
  const std::string what = e.what();
  // CLI11 words these "--dev: 1 required TEXT missing" and "Could not convert: --json = x".
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    const size_t colon = what.find(':');
    if (colon != std::string::npos && what.find("missing") != std::string::npos)
      return "option '" + what.substr(0, colon) + "' needs a value";
    return what;
  }
  if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) {
    const std::string prefix = "Could not convert: ";
    const size_t eq = what.find(" = ");
    if (what.rfind(prefix, 0) == 0 && eq != std::string::npos)
      return "bad value '" + what.substr(eq + 3) + "' for " + what.substr(prefix.size(), eq - prefix.size());
    return what;
  }
  return what;
}

void parse_app(CLI::App& app, const std::vector<std::string>& args, std::vector<std::string>* extras) {
  const bool prefix = app.get_prefix_command();
  if (!prefix) app.allow_extras();
  // CLI11 reads "--opt=" (an empty value) as "--opt" wanting the next word; "--opt" "" is what it means.
  // `from` maps each word handed to CLI11 back to the word it came from, so that what a prefix command
  // leaves (CMD and its arguments) is returned exactly as given.
  std::vector<std::string> words;
  std::vector<size_t> from;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() > 3 && a.starts_with("--") && a.back() == '=' && a.find('=') == a.size() - 1) {
      words.push_back(a.substr(0, a.size() - 1));
      from.push_back(i);
      words.emplace_back();
    } else {
      words.push_back(a);
    }
    from.push_back(i);
  }
  std::vector<std::string> reversed(words.rbegin(), words.rend());  // CLI11 consumes from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    throw HelpRequested{app.help()};
  } catch (const CLI::ParseError& e) {
    throw UsageError(describe_parse_error(e));
  }
  const std::vector<std::string> rest = app.remaining();
  if (prefix) {
    // A prefix command leaves the tail of the words, untouched.
    if (extras != nullptr) {
      extras->clear();
      if (!rest.empty())
        extras->assign(args.begin() + static_cast<std::ptrdiff_t>(from[words.size() - rest.size()]),
                       args.end());
    }
    return;
  }
  if (extras != nullptr) {
    *extras = rest;
    return;
  }
  if (rest.empty()) return;
  const std::string& a = rest.front();
  if (a == "--") throw UsageError("unexpected '--'");
  if (a.size() > 1 && a[0] == '-') throw UsageError("unknown option '" + a + "'");
  throw UsageError("unexpected argument '" + a + "'");
}

std::string version_line(const std::string& tool) {
  std::string v = tool + " " + UROCE_VERSION;
  const std::string git = UROCE_GIT_DESCRIBE;
  if (!git.empty()) v += " (git " + git + ")";
  return v;
}

}  // namespace uroce::tools
