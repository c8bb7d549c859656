#include "perfgate/host/proc_reader.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

namespace perfgate {
namespace fs = std::filesystem;
namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    auto end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

std::string_view first_line(std::string_view text) {
  return text.substr(0, text.find('\n'));
}

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t at = 0;
  while (at < line.size()) {
    auto start = line.find_first_not_of(" \t", at);
    if (start == std::string_view::npos) break;
    auto end = line.find_first_of(" \t", start);
    if (end == std::string_view::npos) end = line.size();
    words.push_back(line.substr(start, end - start));
    at = end;
  }
  return words;
}

template <typename T>
std::optional<T> number(std::string_view word) {
  T value{};
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc{} || end != word.data() + word.size()) return std::nullopt;
  return value;
}

uint64_t u64(std::string_view word) {
  return number<uint64_t>(word).value_or(0);
}

// from_chars for double is in libstdc++ 11+, so this stays locale-free.
double real(std::string_view word) {
  return number<double>(word).value_or(0.0);
}

CpuTimes cpu_times(const std::vector<std::string_view>& w) {
  auto at = [&](size_t i) { return i < w.size() ? u64(w[i]) : 0; };
  return {at(1), at(2), at(3), at(4), at(5), at(6), at(7), at(8)};
}

// "pid (comm) state ppid ..." : fields after comm, counted from state as field 3.
ProcStat stat_fields(pid_t pid, std::string comm, const std::vector<std::string_view>& rest) {
  ProcStat s;
  s.pid = pid;
  s.comm = std::move(comm);
  s.state = rest[0].empty() ? '?' : rest[0][0];
  s.ppid = number<pid_t>(rest[1]).value_or(0);
  s.pgid = number<pid_t>(rest[2]).value_or(0);
  s.utime_ticks = u64(rest[11]);                                           // field 14
  s.stime_ticks = u64(rest[12]);                                           // field 15
  if (rest.size() > 36) s.processor = number<int>(rest[36]).value_or(-1);  // field 39
  return s;
}

std::vector<std::string> numeric_entries(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    auto name = it->path().filename().string();
    if (number<pid_t>(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end(),
            [](const auto& a, const auto& b) { return std::stoll(a) < std::stoll(b); });
  return names;
}

}  // namespace

std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

uint64_t CpuTimes::total() const {
  return user + nice + system + idle + iowait + irq + softirq + steal;
}

double MemInfo::available_pct() const {
  return total_kib ? 100.0 * static_cast<double>(available_kib) / static_cast<double>(total_kib)
                   : 0.0;
}

CpuStat parse_cpu_stat(std::string_view text) {
  CpuStat stat;
  for (auto line : split_lines(text)) {
    auto words = split_words(line);
    if (words.empty() || !words[0].starts_with("cpu")) continue;
    if (words[0] == "cpu")
      stat.all = cpu_times(words);
    else
      stat.cores.push_back(cpu_times(words));
  }
  return stat;
}

MemInfo parse_meminfo(std::string_view text) {
  std::map<std::string_view, uint64_t*> wanted;
  MemInfo m;
  wanted["MemTotal:"] = &m.total_kib;
  wanted["MemAvailable:"] = &m.available_kib;
  wanted["SwapTotal:"] = &m.swap_total_kib;
  wanted["SwapFree:"] = &m.swap_free_kib;
  for (auto line : split_lines(text)) {
    auto words = split_words(line);
    if (words.size() < 2) continue;
    if (auto it = wanted.find(words[0]); it != wanted.end()) *it->second = u64(words[1]);
  }
  return m;
}

std::vector<NetDevice> parse_net_dev(std::string_view text) {
  std::vector<NetDevice> devices;
  for (auto line : split_lines(text)) {
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;  // the two header lines
    auto w = split_words(line.substr(colon + 1));
    auto name = split_words(line.substr(0, colon));
    if (w.size() < 16 || name.size() != 1) continue;
    devices.push_back({std::string(name[0]), u64(w[0]), u64(w[1]), u64(w[2]), u64(w[3]), u64(w[8]),
                       u64(w[9]), u64(w[10]), u64(w[11])});
  }
  return devices;
}

std::optional<uint64_t> parse_tcp_retrans(std::string_view text) {
  std::vector<std::string_view> header;
  for (auto line : split_lines(text)) {
    if (!line.starts_with("Tcp:")) continue;
    auto words = split_words(line);
    if (header.empty()) {
      header = words;
      continue;
    }
    for (size_t i = 1; i < header.size() && i < words.size(); ++i)
      if (header[i] == "RetransSegs") return number<uint64_t>(words[i]);
  }
  return std::nullopt;
}

std::optional<LoadAvg> parse_loadavg(std::string_view text) {
  auto w = split_words(first_line(text));
  if (w.size() < 3) return std::nullopt;
  return LoadAvg{real(w[0]), real(w[1]), real(w[2])};
}

// "some avg10=1.23 avg60=0.50 avg300=0.10 total=123456"
std::optional<Pressure> parse_pressure(std::string_view text) {
  Pressure p;
  bool some = false;
  for (auto line : split_lines(text)) {
    auto words = split_words(line);
    if (words.empty() || (words[0] != "some" && words[0] != "full")) continue;
    bool is_some = words[0] == "some";
    some = some || is_some;
    for (auto word : words) {
      if (word.starts_with("avg10="))
        (is_some ? p.some_avg10 : p.full_avg10) = real(word.substr(6));
      if (word.starts_with("total="))
        (is_some ? p.some_total_us : p.full_total_us) = u64(word.substr(6));
    }
  }
  if (!some) return std::nullopt;
  return p;
}

std::optional<Schedstat> parse_schedstat(std::string_view text) {
  auto words = split_words(text);
  if (words.size() < 2) return std::nullopt;
  auto run = number<uint64_t>(words[0]);
  auto wait = number<uint64_t>(words[1]);
  if (!run || !wait) return std::nullopt;
  return Schedstat{*run, *wait};
}

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  auto open = text.find('(');
  auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return std::nullopt;
  auto head = split_words(text.substr(0, open));
  auto pid = head.empty() ? std::nullopt : number<pid_t>(head[0]);
  auto rest = split_words(first_line(text.substr(close + 1)));
  if (!pid || rest.size() < 13) return std::nullopt;
  return stat_fields(*pid, std::string(text.substr(open + 1, close - open - 1)), rest);
}

std::optional<uint64_t> parse_vm_rss_kib(std::string_view text) {
  for (auto line : split_lines(text)) {
    auto words = split_words(line);
    if (words.size() >= 2 && words[0] == "VmRSS:") return number<uint64_t>(words[1]);
  }
  return std::nullopt;
}

ProcReader::ProcReader(fs::path root) : proc_(std::move(root) / "proc") {}

std::optional<std::string> ProcReader::read(const std::string& relative) const {
  return read_text(proc_ / relative);
}

std::optional<std::string> ProcReader::link(const std::string& relative) const {
  std::error_code ec;
  auto target = fs::read_symlink(proc_ / relative, ec);
  if (ec) return std::nullopt;
  return target.string();
}

std::optional<std::vector<std::string>> ProcReader::fd_links(pid_t pid) const {
  std::vector<std::string> links;
  std::error_code ec;
  fs::directory_iterator it(proc_ / std::to_string(pid) / "fd", ec);
  if (ec) return std::nullopt;
  for (fs::directory_iterator end; !ec && it != end; it.increment(ec)) {
    std::error_code link_ec;
    auto target = fs::read_symlink(it->path(), link_ec);
    if (!link_ec) links.push_back(target.string());  // an fd closed meanwhile is skipped
  }
  if (ec) return std::nullopt;
  return links;
}

std::vector<pid_t> ProcReader::pids() const {
  std::vector<pid_t> out;
  for (const auto& name : numeric_entries(proc_)) out.push_back(*number<pid_t>(name));
  return out;
}

std::optional<CpuStat> ProcReader::cpu() const {
  auto text = read("stat");
  if (!text) return std::nullopt;
  return parse_cpu_stat(*text);
}

std::optional<MemInfo> ProcReader::memory() const {
  auto text = read("meminfo");
  if (!text) return std::nullopt;
  return parse_meminfo(*text);
}

std::vector<NetDevice> ProcReader::net_devices() const {
  return parse_net_dev(read("net/dev").value_or(""));
}

std::optional<uint64_t> ProcReader::tcp_retrans() const {
  return parse_tcp_retrans(read("net/snmp").value_or(""));
}

std::optional<LoadAvg> ProcReader::loadavg() const {
  return parse_loadavg(read("loadavg").value_or(""));
}

std::optional<Pressure> ProcReader::pressure(std::string_view resource) const {
  return parse_pressure(read("pressure/" + std::string(resource)).value_or(""));
}

std::vector<ProcStat> ProcReader::threads(std::string_view pid) const {
  std::vector<ProcStat> out;
  auto task = proc_ / std::string(pid) / "task";
  for (const auto& tid : numeric_entries(task))
    if (auto s = parse_proc_stat(read_text(task / tid / "stat").value_or("")))
      out.push_back(std::move(*s));
  return out;
}

std::optional<uint64_t> ProcReader::wait_ns(std::string_view pid) const {
  std::optional<uint64_t> total;
  for (const auto& [tid, s] : task_schedstats(pid)) total = total.value_or(0) + s.wait_ns;
  return total;
}

std::vector<std::pair<pid_t, Schedstat>> ProcReader::task_schedstats(std::string_view pid) const {
  std::vector<std::pair<pid_t, Schedstat>> out;
  auto task = proc_ / std::string(pid) / "task";
  for (const auto& tid : numeric_entries(task))
    if (auto s = parse_schedstat(read_text(task / tid / "schedstat").value_or("")))
      if (auto id = number<pid_t>(tid)) out.emplace_back(*id, *s);
  return out;
}

std::optional<ProcStat> ProcReader::process(pid_t pid) const {
  return parse_proc_stat(read(std::to_string(pid) + "/stat").value_or(""));
}

std::optional<uint64_t> ProcReader::rss_kib(std::string_view pid) const {
  return parse_vm_rss_kib(read(std::string(pid) + "/status").value_or(""));
}

std::vector<ProcStat> ProcReader::processes() const {
  std::vector<ProcStat> out;
  for (const auto& pid : numeric_entries(proc_))
    if (auto s = parse_proc_stat(read_text(proc_ / pid / "stat").value_or("")))
      out.push_back(std::move(*s));
  return out;
}

std::vector<pid_t> ProcReader::process_tree(pid_t pid, pid_t except) const {
  auto all = processes();
  std::vector<pid_t> tree = {pid};
  // Breadth first over the parent links; each PID joins once, so this ends.
  for (size_t i = 0; i < tree.size(); ++i)
    for (const auto& p : all)
      if (p.ppid == tree[i] && p.pid != except &&
          std::find(tree.begin(), tree.end(), p.pid) == tree.end())
        tree.push_back(p.pid);
  return tree;
}

std::optional<pid_t> ProcReader::find_process(std::string_view name) const {
  for (const auto& p : processes())
    if (p.comm == name) return p.pid;
  return std::nullopt;
}

double ticks_per_second() {
  long hz = sysconf(_SC_CLK_TCK);
  return hz > 0 ? static_cast<double>(hz) : 100.0;
}

}  // namespace perfgate
