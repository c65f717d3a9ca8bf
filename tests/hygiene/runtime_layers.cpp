// runtime_layers: fail when a runtime source or public header includes a concept that its
// own concept may not use.
//
//   runtime_layers SRC_DIR INCLUDE_DIR [GENERATED_INCLUDE_DIR]
//
// SRC_DIR (runtime/src) holds one folder per concept. Its README.md names the concepts
// from the lowest to the highest on a line "Order: a, b, c" and the headers that belong to
// no concept (the umbrellas) on a line "Umbrellas: x.hpp, y.hpp". Each folder's README.md
// names the concepts it may use on a line "Uses: a, b" (or "Uses: nothing") and the public
// headers of INCLUDE_DIR (the cuwrap/ folder) that belong to it on a line
// "Headers: x.hpp, detail/y.hpp".
//
// Checked: every folder is in the order and has a README; a folder uses only concepts
// lower than itself; every public header belongs to exactly one concept or is an umbrella;
// each #include of a runtime source (a private header "folder/name.hpp" or a public
// <cuwrap/name.hpp>) and of a public header names a header of its own concept or of one
// that its concept uses. The headers of GENERATED_INCLUDE_DIR (the generated bindings)
// belong to the lowest concept. Each violation is listed as FILE:LINE: what; the program exits 1
// on any, 0 when there is none, 2 on a usage or I/O error.
#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot read " + path.string());
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) {
    return {};
  }
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

/// The comma-separated items of the line "Key: a, b" in `text`, or nullopt without one.
std::optional<std::vector<std::string>> list_line(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(key + ":", 0) != 0) {
      continue;
    }
    std::vector<std::string> items;
    std::istringstream parts(line.substr(key.size() + 1));
    std::string item;
    while (std::getline(parts, item, ',')) {
      item = trim(item);
      // Markdown code spans are allowed around names: `stream.hpp`.
      item.erase(std::remove(item.begin(), item.end(), '`'), item.end());
      if (!item.empty() && item != "nothing") {
        items.push_back(item);
      }
    }
    return items;
  }
  return std::nullopt;
}

struct Concept {
  std::string name;
  std::size_t rank = 0;
  std::set<std::string> uses;
};

class Checker {
 public:
  Checker(fs::path src, fs::path include, fs::path generated)
      : src_(std::move(src)), include_(std::move(include)), generated_(std::move(generated)) {}

  int run() {
    load();
    if (problems_.empty()) {
      check_sources();
      check_public_headers();
    }
    for (const auto& p : problems_) {
      std::cout << p << '\n';
    }
    std::cout << files_ << " files, " << includes_ << " includes, " << concepts_.size()
              << " concepts, " << problems_.size() << " problems\n";
    return problems_.empty() ? 0 : 1;
  }

 private:
  void problem(const fs::path& file, std::size_t line, const std::string& what) {
    problems_.push_back(file.string() + ":" + std::to_string(line) + ": " + what);
  }

  void load() {
    const fs::path root_readme = src_ / "README.md";
    const std::string root = read_text(root_readme);
    const auto order = list_line(root, "Order");
    if (!order || order->empty()) {
      problem(root_readme, 1, "no \"Order: lowest, ..., highest\" line");
      return;
    }
    for (std::size_t i = 0; i < order->size(); ++i) {
      concepts_[(*order)[i]] = Concept{(*order)[i], i, {}};
    }
    lowest_ = order->front();
    for (const auto& u : list_line(root, "Umbrellas").value_or(std::vector<std::string>{})) {
      umbrellas_.insert(u);
    }
    for (const auto& entry : fs::directory_iterator(src_)) {
      if (!entry.is_directory()) {
        if (entry.path().extension() == ".cpp" || entry.path().extension() == ".hpp") {
          problem(entry.path(), 1, "a source outside every concept folder");
        }
        continue;
      }
      const std::string name = entry.path().filename().string();
      const fs::path readme = entry.path() / "README.md";
      if (concepts_.count(name) == 0) {
        problem(readme, 1, "folder " + name + " is not in the Order of " + root_readme.string());
        continue;
      }
      if (!fs::exists(readme)) {
        problem(readme, 1, "concept " + name + " has no README.md");
        continue;
      }
      const std::string text = read_text(readme);
      const auto uses = list_line(text, "Uses");
      if (!uses) {
        problem(readme, 1, "no \"Uses: ...\" line (\"Uses: nothing\" for none)");
      }
      for (const auto& u : uses.value_or(std::vector<std::string>{})) {
        const auto it = concepts_.find(u);
        if (it == concepts_.end()) {
          problem(readme, 1, name + " uses " + u + ", which is no concept");
        } else if (it->second.rank >= concepts_[name].rank) {
          problem(readme, 1, name + " uses " + u + ", which is not below it in the Order");
        } else {
          concepts_[name].uses.insert(u);
        }
      }
      for (const auto& h : list_line(text, "Headers").value_or(std::vector<std::string>{})) {
        const auto [it, fresh] = header_owner_.emplace(h, name);
        if (!fresh) {
          problem(readme, 1, h + " is claimed by both " + it->second + " and " + name);
        }
      }
      seen_.insert(name);
    }
    for (const auto& [name, c] : concepts_) {
      if (seen_.count(name) == 0) {
        problem(root_readme, 1, "concept " + name + " has no folder");
      }
    }
  }

  /// Whether a file of concept `from` may include a header of concept `to`.
  bool allowed(const std::string& from, const std::string& to) const {
    return from == to || concepts_.at(from).uses.count(to) != 0;
  }

  void check_includes(const fs::path& file, const std::string& concept_name) {
    ++files_;
    static const std::regex include(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
    std::istringstream lines(read_text(file));
    std::string line;
    std::size_t number = 0;
    while (std::getline(lines, line)) {
      ++number;
      std::smatch m;
      if (!std::regex_search(line, m, include)) {
        continue;
      }
      const std::string target = m[2].str();
      std::string owner;
      if (target.rfind("cuwrap/", 0) == 0) {
        const std::string header = target.substr(7);
        if (umbrellas_.count(header) != 0) {
          problem(file, number, "includes the umbrella <" + target + ">");
          continue;
        }
        const auto it = header_owner_.find(header);
        if (it != header_owner_.end()) {
          owner = it->second;
        } else if (!generated_.empty() &&
                   (fs::exists(generated_ / header) || table_header(header))) {
          owner = lowest_;
        } else {
          problem(file, number, "<" + target + "> belongs to no concept (list it under Headers:)");
          continue;
        }
      } else if (m[1].str() == "\"") {
        const auto slash = target.find('/');
        owner = slash == std::string::npos ? concept_name : target.substr(0, slash);
        if (concepts_.count(owner) == 0) {
          problem(file, number, "\"" + target + "\" is not \"concept/name\" of runtime/src");
          continue;
        }
      } else {
        continue;  // the standard library, CUDA's and other system headers
      }
      ++includes_;
      if (!allowed(concept_name, owner)) {
        problem(file, number,
                concept_name + " includes " + target + " of " + owner + ", which " + concept_name +
                    " may not use");
      }
    }
  }

  void check_sources() {
    for (const auto& name : seen_) {
      for (const auto& entry : fs::recursive_directory_iterator(src_ / name)) {
        const auto ext = entry.path().extension();
        if (entry.is_regular_file() && (ext == ".cpp" || ext == ".hpp")) {
          check_includes(entry.path(), name);
        }
      }
    }
  }

  void check_public_headers() {
    for (const auto& entry : fs::recursive_directory_iterator(include_)) {
      if (!entry.is_regular_file() || entry.path().extension() != ".hpp") {
        continue;
      }
      const std::string header = fs::relative(entry.path(), include_).generic_string();
      if (umbrellas_.count(header) != 0) {
        continue;
      }
      const auto it = header_owner_.find(header);
      if (it == header_owner_.end()) {
        problem(entry.path(), 1, header + " belongs to no concept (list it under Headers:)");
        continue;
      }
      check_includes(entry.path(), it->second);
    }
  }

  fs::path src_;
  fs::path include_;
  fs::path generated_;
  std::string lowest_;
  std::map<std::string, Concept> concepts_;
  std::set<std::string> seen_;
  std::set<std::string> umbrellas_;

  // Whether `header` is one cuwrap-gen writes for a library of its table, named by the
  // generated libraries.cmake of the bindings of GENERATED_INCLUDE_DIR, also where they
  // lack the library (nvfatbin.hpp without nvFatbin.h).
  bool table_header(const std::string& header) {
    if (!table_read_) {
      table_read_ = true;
      std::ifstream in(generated_ / ".." / ".." / "libraries.cmake");  // <root>/include/cuwrap
      const std::string text((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      const std::regex file(R"(include/cuwrap/([A-Za-z0-9_/]+\.hpp))");
      for (std::sregex_iterator it(text.begin(), text.end(), file), end; it != end; ++it) {
        table_headers_.insert((*it)[1].str());
      }
    }
    return table_headers_.count(header) != 0;
  }
  bool table_read_ = false;
  std::set<std::string> table_headers_;
  std::map<std::string, std::string> header_owner_;
  std::vector<std::string> problems_;
  std::size_t files_ = 0;
  std::size_t includes_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::cerr << "usage: runtime_layers SRC_DIR INCLUDE_DIR [GENERATED_INCLUDE_DIR]\n";
    return 2;
  }
  try {
    return Checker(argv[1], argv[2], argc == 4 ? fs::path(argv[3]) : fs::path()).run();
  } catch (const std::exception& e) {
    std::cerr << "runtime_layers: " << e.what() << '\n';
    return 2;
  }
}
