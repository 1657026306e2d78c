#include "server/net/token_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/unique_fd.h"
#include "spdlog/spdlog.h"

namespace colltest::server {
namespace {

constexpr absl::string_view kCommonNamePrefix = "cn:";
constexpr size_t kMaxNameLength = 64;

// Names appear in logs, in RunResult.owner and as the user of metrics' HTTP Basic auth (which
// cannot hold ':'), so they keep to a plain alphabet.
bool IsPlainName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '-' && c != '@') return false;
  }
  return true;
}

bool IsPrintableWithoutBlanks(absl::string_view text) {
  for (char c : text) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

// Parses one line of the file, already split into its fields, into `p`.
class LineParser {
 public:
  LineParser(const std::string& path, int line)
      : where_(absl::StrCat("--token-file ", path, " line ", line, ": ")) {}

  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(where_, what));
  }

  absl::StatusOr<Principal> Parse(const std::vector<absl::string_view>& fields) const {
    if (fields.size() != 3) {
      return Error(absl::StrCat("expected NAME ROLE TOKEN or NAME ROLE cn:COMMON_NAME, got ",
                                fields.size(), " fields"));
    }
    Principal p;
    p.name = std::string(fields[0]);
    if (!IsPlainName(p.name)) {
      return Error(absl::StrCat("name \"", p.name, "\": use 1 to ", kMaxNameLength,
                                " letters, digits, '.', '_', '-' or '@'"));
    }
    std::optional<Role> role = ParseRole(fields[1]);
    if (!role.has_value()) {
      return Error(absl::StrCat("role \"", fields[1], "\": unknown (viewer, runner, admin)"));
    }
    p.role = *role;
    absl::string_view credential = fields[2];
    if (absl::ConsumePrefix(&credential, kCommonNamePrefix)) {
      if (credential.empty()) return Error("cn: needs the client certificate's subject CN");
      p.common_name = std::string(credential);
      return p;
    }
    if (absl::Status s = CheckToken(credential); !s.ok()) return s;
    p.token = std::string(credential);
    return p;
  }

  absl::Status CheckToken(absl::string_view token) const {
    if (!IsPrintableWithoutBlanks(token)) {
      return Error("the token must be printable ASCII without blanks");
    }
    if (token.size() < kMinTokenLength) {
      return Error(absl::StrCat("the token has ", token.size(),
                                " characters, must have >= ", kMinTokenLength));
    }
    return absl::OkStatus();
  }

 private:
  std::string where_;
};

// Refuses a name, token or CN that an earlier line already has: with two equal tokens the caller's
// name would depend on the order of the lines.
class Uniqueness {
 public:
  absl::Status Add(const Principal& p, const LineParser& parser) {
    if (auto [it, added] = names_.emplace(p.name, line_); !added) {
      return parser.Error(absl::StrCat("name \"", p.name, "\" is also on line ", it->second));
    }
    if (!p.token.empty()) {
      if (auto [it, added] = tokens_.emplace(p.token, line_); !added) {
        return parser.Error(absl::StrCat("the token of ", p.name, " is also on line ", it->second));
      }
    }
    if (!p.common_name.empty()) {
      if (auto [it, added] = common_names_.emplace(p.common_name, line_); !added) {
        return parser.Error(absl::StrCat("cn:", p.common_name, " is also on line ", it->second));
      }
    }
    return absl::OkStatus();
  }
  void SetLine(int line) { line_ = line; }

 private:
  int line_ = 0;
  std::map<std::string, int> names_, tokens_, common_names_;
};

struct NumberedLine {
  int number;
  std::vector<absl::string_view> fields;
};

const char* FileTypeName(mode_t mode) {
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  if (S_ISDIR(mode)) return "directory";
  return "special file";
}

std::vector<NumberedLine> MeaningfulLines(absl::string_view text) {
  std::vector<NumberedLine> lines;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    lines.push_back({number, absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty())});
  }
  return lines;
}

}  // namespace

absl::StatusOr<std::vector<Principal>> ParseTokenFile(absl::string_view text,
                                                      const std::string& path) {
  const std::vector<NumberedLine> lines = MeaningfulLines(text);
  if (lines.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--token-file ", path, ": no token (expected lines NAME ROLE TOKEN)"));
  }
  // The format before roles: one bare token, which was everyone's full access.
  if (lines.size() == 1 && lines[0].fields.size() == 1) {
    const LineParser parser(path, lines[0].number);
    if (absl::Status s = parser.CheckToken(lines[0].fields[0]); !s.ok()) return s;
    return std::vector<Principal>{{"default", Role::kAdmin, std::string(lines[0].fields[0]), ""}};
  }
  std::vector<Principal> principals;
  Uniqueness unique;
  for (const NumberedLine& line : lines) {
    const LineParser parser(path, line.number);
    absl::StatusOr<Principal> p = parser.Parse(line.fields);
    if (!p.ok()) return p.status();
    unique.SetLine(line.number);
    if (absl::Status s = unique.Add(*p, parser); !s.ok()) return s;
    principals.push_back(*std::move(p));
  }
  return principals;
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading otherwise blocks until a writer comes, and colltestd,
  // not yet serving, would sit in open() deaf to SIGTERM. No O_NOFOLLOW: Kubernetes mounts secrets
  // as symlinks; the fstat below judges the file the link leads to.
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) {
    return absl::NotFoundError(
        absl::StrCat("--token-file ", path, ": cannot open it: ", std::strerror(errno)));
  }
  struct stat info {};
  if (fstat(fd.get(), &info) != 0) {
    return absl::NotFoundError(
        absl::StrCat("--token-file ", path, ": cannot stat it: ", std::strerror(errno)));
  }
  // A FIFO, a socket or a device (/dev/zero, /dev/stdin) could block the start or never end.
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--token-file ", path, ": is a ", FileTypeName(info.st_mode), ", not a regular file"));
  }
  if (info.st_size > static_cast<off_t>(kMaxTokenFileBytes)) {
    return absl::InvalidArgumentError(absl::StrCat("--token-file ", path, ": ", info.st_size,
                                                   " bytes, the limit is ", kMaxTokenFileBytes));
  }
  if (const std::string warning = LooseModeWarning(path, info.st_mode); !warning.empty()) {
    spdlog::warn("{}", warning);
  }
  std::string text;
  char buffer[4096];
  while (text.size() <= kMaxTokenFileBytes) {
    const ssize_t n = read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::NotFoundError(
          absl::StrCat("--token-file ", path, ": cannot read it: ", std::strerror(errno)));
    }
    if (n == 0) return text;
    text.append(buffer, static_cast<size_t>(n));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--token-file ", path, ": grew past ", kMaxTokenFileBytes, " bytes while read"));
}

absl::StatusOr<std::vector<Principal>> LoadTokenFile(const std::string& path, bool mutual_tls) {
  absl::StatusOr<std::string> text = ReadTokenFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<Principal>> principals = ParseTokenFile(*text, path);
  if (!principals.ok()) return principals.status();
  for (const Principal& p : *principals) {
    if (!p.common_name.empty() && !mutual_tls) {
      return absl::InvalidArgumentError(absl::StrCat("--token-file ", path, ": ", p.name,
                                                     " is identified by cn:", p.common_name,
                                                     ", which needs mutual TLS (--tls-client-ca)"));
    }
  }
  return principals;
}

std::string LooseModeWarning(const std::string& path, unsigned mode) {
  if ((mode & (S_IRWXG | S_IRWXO)) == 0) return "";
  return absl::StrFormat(
      "--token-file %s: mode %04o lets its group or others at the tokens; chmod 600 it", path,
      mode & 07777);
}

}  // namespace colltest::server
