/**
 * @file type_list.hpp
 * Compile-time lists of types: archetype component sets, graph node lists, queries.
 */
#pragma once

#include <cstddef>
#include <type_traits>

namespace mv {

template <class... Ts>
struct TypeList {
  static constexpr std::size_t size = sizeof...(Ts);
};

/// True when T is one of Ts.
template <class T, class List>
struct Contains;
template <class T, class... Ts>
struct Contains<T, TypeList<Ts...>> : std::bool_constant<(std::is_same_v<T, Ts> || ...)> {};
template <class T, class List>
inline constexpr bool kContains = Contains<T, List>::value;

/// True when every type of `Sub` is in `Super`.
template <class Sub, class Super>
struct ContainsAll;
template <class... Ts, class Super>
struct ContainsAll<TypeList<Ts...>, Super> : std::bool_constant<(kContains<Ts, Super> && ...)> {};
template <class Sub, class Super>
inline constexpr bool kContainsAll = ContainsAll<Sub, Super>::value;

/// Position of T in the list (size if absent).
template <class T, class List>
struct IndexOf;
template <class T>
struct IndexOf<T, TypeList<>> : std::integral_constant<std::size_t, 0> {};
template <class T, class Head, class... Tail>
struct IndexOf<T, TypeList<Head, Tail...>>
    : std::integral_constant<std::size_t,
                             std::is_same_v<T, Head> ? 0 : 1 + IndexOf<T, TypeList<Tail...>>::value> {};
template <class T, class List>
inline constexpr std::size_t kIndexOf = IndexOf<T, List>::value;

/// True when no type appears twice.
template <class List>
struct AllDistinct;
template <>
struct AllDistinct<TypeList<>> : std::true_type {};
template <class Head, class... Tail>
struct AllDistinct<TypeList<Head, Tail...>>
    : std::bool_constant<!kContains<Head, TypeList<Tail...>> && AllDistinct<TypeList<Tail...>>::value> {};

/// The types of two lists, in order.
template <class A, class B>
struct Concat;
template <class... As, class... Bs>
struct Concat<TypeList<As...>, TypeList<Bs...>> {
  using type = TypeList<As..., Bs...>;
};
template <class A, class B>
using ConcatT = typename Concat<A, B>::type;

/// Calls f(std::type_identity<T>{}) for each T of the list, in order.
template <class... Ts, class F>
constexpr void forEachType(TypeList<Ts...>, F&& f) {
  (f(std::type_identity<Ts>{}), ...);
}

}  // namespace mv
