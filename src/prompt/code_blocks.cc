#include "code_blocks.h"

#include <cctype>

namespace kforge::prompt_internal {
namespace {

struct Line {
  std::string_view text;  // without the newline
  std::size_t begin = 0;
  std::size_t end = 0;  // past the newline
};

std::vector<Line> SplitLines(std::string_view text) {
  std::vector<Line> lines;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::size_t stop = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(pos, stop - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::size_t next = nl == std::string_view::npos ? text.size() : nl + 1;
    lines.push_back({line, pos, next});
    pos = next;
  }
  return lines;
}

// Fence character and length if `line` opens or closes a fence; info receives the rest.
bool ParseFence(std::string_view line, char* fence_char, std::size_t* count,
                std::string_view* info) {
  std::size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i >= line.size() || (line[i] != '`' && line[i] != '~')) return false;
  const char c = line[i];
  std::size_t n = 0;
  while (i + n < line.size() && line[i + n] == c) ++n;
  if (n < 3) return false;
  std::string_view rest = line.substr(i + n);
  if (c == '`' && rest.find('`') != std::string_view::npos) return false;
  *fence_char = c;
  *count = n;
  *info = Trim(rest);
  return true;
}

bool IsFileNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.' ||
         c == '/';
}

// A plausible file name: name characters, one dot followed by a short alphanumeric ending.
bool LooksLikeFileName(std::string_view word) {
  if (word.empty() || word.size() > 200) return false;
  for (char c : word) {
    if (!IsFileNameChar(c)) return false;
  }
  std::size_t dot = word.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 >= word.size()) return false;
  std::string_view ext = word.substr(dot + 1);
  if (ext.size() > 5) return false;
  for (char c : ext) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) return false;
  }
  return std::isalpha(static_cast<unsigned char>(ext[0])) != 0;
}

std::string_view StripQuotes(std::string_view word) {
  while (!word.empty() && (word.front() == '"' || word.front() == '\'')) word.remove_prefix(1);
  while (!word.empty() && (word.back() == '"' || word.back() == '\'')) word.remove_suffix(1);
  return word;
}

std::vector<std::string_view> Words(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])) != 0) ++i;
    std::size_t start = i;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])) == 0) ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

// Language tag and file name from a fence's info string: "cuda title=kernel.cu",
// "kernel.cu", "python:kernel.py", "cpp {file=kernel.cpp}".
void ParseInfo(std::string_view info, CodeBlock* block) {
  std::vector<std::string_view> words = Words(info);
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string_view word = words[i];
    while (!word.empty() && (word.front() == '{' || word.front() == '[')) word.remove_prefix(1);
    while (!word.empty() && (word.back() == '}' || word.back() == ']' || word.back() == ',')) {
      word.remove_suffix(1);
    }
    if (std::size_t eq = word.find('='); eq != std::string_view::npos) {
      std::string key = Lower(word.substr(0, eq));
      std::string_view value = StripQuotes(word.substr(eq + 1));
      if ((key == "title" || key == "file" || key == "filename" || key == "name" ||
           key == "path") &&
          block->file_name.empty() && LooksLikeFileName(value)) {
        block->file_name = std::string(value);
      }
      continue;
    }
    if (i == 0) {
      std::string_view language = word;
      if (std::size_t colon = word.find(':'); colon != std::string_view::npos) {
        language = word.substr(0, colon);
        std::string_view name = word.substr(colon + 1);
        if (LooksLikeFileName(name)) block->file_name = std::string(name);
      }
      if (LooksLikeFileName(language) && block->file_name.empty()) {
        block->file_name = std::string(language);
      } else {
        block->language = Lower(language);
      }
      continue;
    }
    word = StripQuotes(word);
    if (block->file_name.empty() && LooksLikeFileName(word)) block->file_name = std::string(word);
  }
}

bool StartsWithCaseless(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && Lower(text.substr(0, prefix.size())) == prefix;
}

// "// file: kernel.cu", "# filename: kernel.py", "/* file: kernel.cpp */".
std::string FileNameFromHeader(std::string_view line) {
  line = Trim(line);
  for (std::string_view marker : {"//", "/*", "#", "--"}) {
    if (line.starts_with(marker)) {
      line = Trim(line.substr(marker.size()));
      break;
    }
  }
  for (std::string_view key : {"filename:", "file name:", "file:", "path:"}) {
    if (StartsWithCaseless(line, key)) {
      std::string_view rest = Trim(line.substr(key.size()));
      if (rest.ends_with("*/")) rest = Trim(rest.substr(0, rest.size() - 2));
      rest = StripQuotes(rest);
      if (LooksLikeFileName(rest)) return std::string(rest);
    }
  }
  return {};
}

// A file name on a short prose line just above a fence: "**kernel.cu**", "### `kernel.py`".
std::string FileNameFromProse(std::string_view line) {
  line = Trim(line);
  if (line.empty() || line.size() > 120) return {};
  std::string cleaned;
  for (char c : line) {
    cleaned += (c == '*' || c == '`' || c == '#' || c == ':' || c == '(' || c == ')' || c == '"' ||
                c == '\'' || c == ',')
                   ? ' '
                   : c;
  }
  for (std::string_view word : Words(cleaned)) {
    while (!word.empty() && word.back() == '.') word.remove_suffix(1);
    if (LooksLikeFileName(word) && word.find('/') == std::string_view::npos) {
      std::string ext = ExtensionOf(word);
      // Only endings of source files: a prose line mentions "e.g." or "1.5x" too.
      for (std::string_view known : {".cu", ".cuh", ".hip", ".cpp", ".cc", ".cxx", ".h", ".hpp",
                                     ".py", ".sycl", ".cl", ".metal"}) {
        if (ext == known) return std::string(word);
      }
    }
  }
  return {};
}

}  // namespace

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) {
    text.remove_suffix(1);
  }
  return text;
}

std::string ExtensionOf(std::string_view file_name) {
  std::size_t slash = file_name.rfind('/');
  if (slash != std::string_view::npos) file_name = file_name.substr(slash + 1);
  std::size_t dot = file_name.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return {};
  return Lower(file_name.substr(dot));
}

std::vector<CodeBlock> FindCodeBlocks(std::string_view text) {
  std::vector<Line> lines = SplitLines(text);
  std::vector<CodeBlock> blocks;
  std::size_t i = 0;
  std::size_t prose_start = 0;  // first line after the previous block
  while (i < lines.size()) {
    char fence_char = 0;
    std::size_t count = 0;
    std::string_view info;
    if (!ParseFence(lines[i].text, &fence_char, &count, &info)) {
      ++i;
      continue;
    }
    CodeBlock block;
    block.info = std::string(info);
    block.begin = lines[i].begin;
    ParseInfo(info, &block);
    std::size_t j = i + 1;
    block.terminated = false;
    for (; j < lines.size(); ++j) {
      char c = 0;
      std::size_t n = 0;
      std::string_view rest;
      if (ParseFence(lines[j].text, &c, &n, &rest) && c == fence_char && n >= count &&
          rest.empty()) {
        block.terminated = true;
        break;
      }
      block.body.append(lines[j].text);
      block.body += '\n';
    }
    block.end = block.terminated ? lines[j].end : text.size();
    if (block.file_name.empty() && i + 1 < lines.size() && i + 1 < j) {
      // The first non-empty line of the body.
      for (std::size_t k = i + 1; k < j; ++k) {
        if (Trim(lines[k].text).empty()) continue;
        block.file_name = FileNameFromHeader(lines[k].text);
        break;
      }
    }
    if (block.file_name.empty()) {
      for (std::size_t k = i; k > prose_start; --k) {
        if (Trim(lines[k - 1].text).empty()) continue;
        block.file_name = FileNameFromProse(lines[k - 1].text);
        break;
      }
    }
    const bool terminated = block.terminated;
    blocks.push_back(std::move(block));
    i = terminated ? j + 1 : lines.size();
    prose_start = i;
  }
  return blocks;
}

}  // namespace kforge::prompt_internal
